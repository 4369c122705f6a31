;;; dispatch: 1,000,000 calls of a generic function with one method per
;;; class, over instances of three classes, in the same loop as calls.lisp.
;;; Measures: method dispatch (class of the argument, the dispatch cache).
(defclass shape () ((n :initarg :n :reader shape-n)))
(defclass circle (shape) ())
(defclass square (shape) ())
(defclass triangle (shape) ())

(defgeneric unit (s))
(defmethod unit ((s circle)) (shape-n s))
(defmethod unit ((s square)) (shape-n s))
(defmethod unit ((s triangle)) (shape-n s))

(defun run (n)
  (let ((ring (list (make-instance 'circle :n 1)
                    (make-instance 'square :n 2)
                    (make-instance 'triangle :n 3)))
        (sum 0))
    (setf (cdr (last ring)) ring)
    (dotimes (i n)
      (setq sum (+ sum (unit (car ring))))
      (setq ring (cdr ring)))
    sum))

(format t "~d~%" (run 1000000))
