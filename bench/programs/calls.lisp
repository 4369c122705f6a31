;;; calls: the baseline of the CLOS programs — 1,000,000 calls of an
;;; ordinary function, in the same loop as dispatch.lisp.
;;; Measures: function-call overhead (compare with dispatch).
(defstruct box n)

(defun unit (s) (box-n s))

(defun run (n)
  (let ((ring (list (make-box :n 1) (make-box :n 2) (make-box :n 3)))
        (sum 0))
    (setf (cdr (last ring)) ring)
    (dotimes (i n)
      (setq sum (+ sum (unit (car ring))))
      (setq ring (cdr ring)))
    sum))

(format t "~d~%" (run 1000000))
