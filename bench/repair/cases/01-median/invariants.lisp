(= (median #(3 1 2)) 2)
(= (median #(5)) 5)
