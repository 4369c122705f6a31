;;; Subscriptions, billed monthly.  Prices in cents.

(defparameter *plan-prices* '(:basic 900 :pro 2900 :team 9900))

(defclass subscription ()
  ((customer :initarg :customer :reader sub-customer)
   (plan :initarg :plan :accessor sub-plan)))

(defvar *subscriptions* (make-hash-table :test #'equal))

(defun subscribe (customer plan)
  (setf (gethash customer *subscriptions*)
        (make-instance 'subscription :customer customer :plan plan)))

(subscribe "acme" :team)
(subscribe "globex" :basic)

;; Version 2: negotiated discounts, a fraction of the price (1/10 is 10% off).
(defclass subscription ()
  ((customer :initarg :customer :reader sub-customer)
   (plan :initarg :plan :accessor sub-plan)
   (discount :initarg :discount :accessor sub-discount)))

(defun subscribe (customer plan &optional (discount 0))
  (setf (gethash customer *subscriptions*)
        (make-instance 'subscription :customer customer :plan plan :discount discount)))

(subscribe "initech" :pro 1/10)
(subscribe "hooli" :team 1/4)

(defun monthly-charge (customer)
  "What CUSTOMER pays a month, in cents: the plan's price less the
subscription's discount, a fraction of the price (1/10 is 10% off).
Subscriptions from before discounts existed have none."
  (let ((s (gethash customer *subscriptions*)))
    (round (* (getf *plan-prices* (sub-plan s)) (- 1 (sub-discount s))))))
