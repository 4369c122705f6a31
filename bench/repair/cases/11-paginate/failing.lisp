(page '(a b c d e f g) 2)
