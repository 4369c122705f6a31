;;; eqlspec: 1,000,000 calls of a generic function dispatching on EQL
;;; specializers (five keywords and a default method).
;;; Measures: dispatch through EQL specializers.
(defgeneric weight (color))
(defmethod weight ((c (eql :red))) 1)
(defmethod weight ((c (eql :green))) 2)
(defmethod weight ((c (eql :blue))) 3)
(defmethod weight ((c (eql :black))) 4)
(defmethod weight ((c (eql :white))) 5)
(defmethod weight ((c t)) 0)

(defun run (n)
  (let ((colors (list :red :green :blue :black :white :pink))
        (sum 0))
    (setf (cdr (last colors)) colors)   ; a ring
    (dotimes (i n)
      (setq sum (+ sum (weight (car colors))))
      (setq colors (cdr colors)))
    sum))

(format t "~d~%" (run 1000000))
