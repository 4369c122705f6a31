;;; startup: the smallest useful program.  Measures process start-up and
;;; image/prelude loading time.
(format t "~d~%" (+ 1 2))
