;;; combo: 1,000,000 calls of a generic function whose effective method is
;;; an :around method (calling call-next-method), a :before and an :after
;;; method and two primary methods chained by call-next-method.
;;; Measures: the standard method combination.
(defclass account () ((balance :initform 0 :accessor balance)))
(defclass savings (account) ((rate :initform 1 :reader rate)))

(defvar *audits* 0)

(defgeneric deposit (acct amount))
(defmethod deposit ((a account) amount)
  (incf (balance a) amount))
(defmethod deposit ((a savings) amount)
  (call-next-method a (+ amount (rate a))))
(defmethod deposit :before ((a account) amount)
  (when (< amount 0) (error "negative deposit")))
(defmethod deposit :after ((a savings) amount)
  (incf *audits*))
(defmethod deposit :around ((a account) amount)
  (if (> amount 1000) 0 (call-next-method)))

(defun run (n)
  (let ((s (make-instance 'savings)))
    (dotimes (i n)
      (deposit s 1))
    (+ (balance s) *audits*)))

(format t "~d~%" (run 1000000))
