(equal (page '(1 2 3 4) 0) '(1 2 3))
(= (page-count '(1 2 3 4)) 2)
