(page '(a b c d e f g) 0)
(page '(a b c d e f g) 1)
(page #(1 2 3 4 5 6) 1)
(page "abcdefghi" 2)
