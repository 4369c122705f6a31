;;; instances: 100,000 make-instance calls (initargs, initforms, default
;;; initargs, an :after initialize-instance method), then a pass reading
;;; every instance through accessors.
;;; Measures: instance creation and initialisation, slot readers.
(defclass item ()
  ((id :initarg :id :reader item-id)
   (qty :initarg :qty :initform 1 :accessor item-qty)
   (price :initarg :price :reader item-price)
   (total :reader item-total))
  (:default-initargs :price 3))

(defmethod initialize-instance :after ((i item) &key)
  (setf (slot-value i 'total) (* (item-qty i) (item-price i))))

(defun run (n)
  (let ((items nil) (sum 0))
    (dotimes (i n)
      (push (make-instance 'item :id i :qty 2) items))
    (dolist (i items)
      (setq sum (+ sum (item-total i) (item-qty i))))
    sum))

(format t "~d~%" (run 100000))
