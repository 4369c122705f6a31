;;; startup: the smallest useful program.
(display (+ 1 2))
(newline)
