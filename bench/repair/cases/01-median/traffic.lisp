(median #(5))
(median #(3 1 2))
(median #(9 4 7 1 8))
(median #(1/2 5/2 3/2))
