;;; A small bank: accounts with validation, history and reports.
(define-condition insufficient-funds (error)
  ((account :initarg :account :reader error-account)
   (amount :initarg :amount :reader error-amount))
  (:report (lambda (c s)
             (format s "Insufficient funds in ~a: cannot withdraw ~,2f"
                     (account-owner (error-account c)) (error-amount c)))))

(defclass account ()
  ((owner :initarg :owner :accessor account-owner)
   (balance :initarg :balance :initform 0 :accessor account-balance)
   (history :initform '() :accessor account-history)
   (id :reader account-id)))

(defvar *next-id* 100)

(defmethod initialize-instance :after ((a account) &key)
  (setf (slot-value a 'id) (incf *next-id*)))

(defclass savings-account (account)
  ((rate :initarg :rate :initform 0.05 :accessor account-rate)))

(defclass checking-account (account)
  ((overdraft :initarg :overdraft :initform 100 :reader overdraft-limit)))

(defmethod print-object ((a account) stream)
  (print-unreadable-object (a stream :type t)
    (format stream "~a #~d balance=~,2f" (account-owner a) (account-id a) (account-balance a))))

(defgeneric deposit (account amount))
(defgeneric withdraw (account amount))

(defmethod deposit :before ((a account) amount)
  (unless (plusp amount) (error "Deposit must be positive, got ~a" amount)))

(defmethod deposit ((a account) amount)
  (incf (account-balance a) amount)
  (push (list :deposit amount) (account-history a))
  (account-balance a))

(defmethod withdraw ((a account) amount)
  (when (> amount (account-balance a))
    (error 'insufficient-funds :account a :amount amount))
  (decf (account-balance a) amount)
  (push (list :withdraw amount) (account-history a))
  (account-balance a))

(defmethod withdraw ((a checking-account) amount)
  (if (> amount (+ (account-balance a) (overdraft-limit a)))
      (call-next-method)
      (progn (decf (account-balance a) amount)
             (push (list :withdraw amount) (account-history a))
             (account-balance a))))

(defgeneric add-interest (account))
(defmethod add-interest ((a account)) 0)
(defmethod add-interest ((a savings-account))
  (let ((interest (* (account-balance a) (account-rate a))))
    (deposit a interest)
    interest))

(defvar *accounts*
  (list (make-instance 'savings-account :owner "Alice" :balance 1000)
        (make-instance 'checking-account :owner "Bob" :balance 50)
        (make-instance 'account :owner "Carol")))

(dolist (a *accounts*) (print a))
(terpri)
(deposit (first *accounts*) 250)
(format t "Alice after deposit: ~,2f~%" (account-balance (first *accounts*)))
(format t "Interest: ~,2f~%" (add-interest (first *accounts*)))
(format t "Bob withdraws 120: ~,2f~%" (withdraw (second *accounts*) 120))
(handler-case (withdraw (third *accounts*) 10)
  (insufficient-funds (c) (format t "Error: ~a~%" c)))
(handler-case (deposit (third *accounts*) -5)
  (error (c) (format t "Error: ~a~%" c)))
(handler-case (withdraw (second *accounts*) 500)
  (error (c) (format t "Error: ~a (~a)~%" c (type-of c))))
(dolist (a *accounts*)
  (format t "~a: ~{~a~^, ~}~%" (account-owner a) (reverse (account-history a))))
(format t "Total: ~,2f~%" (reduce #'+ *accounts* :key #'account-balance))
(format t "~s~%" (mapcar #'type-of *accounts*))
(dolist (a (sort (copy-list *accounts*) #'> :key #'account-balance)) (print a))
