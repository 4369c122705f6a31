;;; A bank with conditions, restarts and handlers.
(defpackage #:bank (:use #:cl))
(in-package #:bank)

(define-condition bank-error (error)
  ((account :initarg :account :reader bank-error-account))
  (:report (lambda (c s) (format s "Bank error on account ~a" (bank-error-account c)))))

(define-condition insufficient-funds (bank-error)
  ((requested :initarg :requested :reader requested)
   (available :initarg :available :reader available))
  (:report (lambda (c s)
             (format s "Insufficient funds in ~a: requested ~,2f, available ~,2f"
                     (bank-error-account c) (requested c) (available c)))))

(define-condition account-frozen (bank-error) ()
  (:report "Account is frozen"))

(defclass account ()
  ((id :initarg :id :reader account-id)
   (owner :initarg :owner :accessor account-owner)
   (balance :initarg :balance :initform 0 :accessor balance)
   (frozen :initform nil :accessor frozen-p)
   (history :initform '() :accessor history)))

(defmethod print-object ((a account) stream)
  (print-unreadable-object (a stream :type t)
    (format stream "~a ~a ~,2f" (account-id a) (account-owner a) (balance a))))

(defgeneric withdraw (account amount))
(defgeneric deposit (account amount))

(defmethod deposit ((a account) amount)
  (check-type amount (real 0))
  (incf (balance a) amount)
  (push (list :deposit amount) (history a))
  (balance a))

(defmethod withdraw :before ((a account) amount)
  (declare (ignore amount))
  (when (frozen-p a)
    (error 'account-frozen :account (account-id a))))

(defmethod withdraw ((a account) amount)
  (restart-case
      (progn
        (when (> amount (balance a))
          (error 'insufficient-funds :account (account-id a)
                                     :requested amount :available (balance a)))
        (decf (balance a) amount)
        (push (list :withdraw amount) (history a))
        amount)
    (withdraw-available ()
      :report "Withdraw what is available."
      (let ((amt (balance a)))
        (setf (balance a) 0)
        (push (list :withdraw amt) (history a))
        amt))
    (use-value (v)
      :report "Withdraw another amount."
      (withdraw a v))))

(defmethod withdraw :after ((a account) amount)
  (format t "  [audit] ~a withdrew ~a~%" (account-id a) amount))

(defvar *accounts* (make-hash-table :test 'equal))

(defun open-account (id owner balance)
  (setf (gethash id *accounts*) (make-instance 'account :id id :owner owner :balance balance)))

(open-account "A-1" "Alice" 100)
(open-account "B-2" "Bob" 50)
(open-account "C-3" "Carol" 10)
(setf (frozen-p (gethash "C-3" *accounts*)) t)

(format t "~a~%" (gethash "A-1" *accounts*))
(format t "Withdrew ~a~%" (withdraw (gethash "A-1" *accounts*) 30))

;; handler-case
(handler-case (withdraw (gethash "B-2" *accounts*) 80)
  (insufficient-funds (e)
    (format t "Caught: ~a~%" e)
    (format t "  short by ~a~%" (- (requested e) (available e)))))

(handler-case (withdraw (gethash "C-3" *accounts*) 1)
  (bank-error (e) (format t "Caught ~a: ~a~%" (type-of e) e)))

;; handler-bind with invoke-restart
(format t "Got ~a~%"
        (handler-bind ((insufficient-funds
                         (lambda (c)
                           (format t "Handling: ~a~%" c)
                           (invoke-restart 'withdraw-available))))
          (withdraw (gethash "B-2" *accounts*) 80)))

(format t "Got ~a~%"
        (handler-bind ((insufficient-funds
                         (lambda (c) (declare (ignore c)) (use-value 5))))
          (withdraw (gethash "A-1" *accounts*) 1000)))

;; compute-restarts and restart names
(handler-bind ((insufficient-funds
                 (lambda (c)
                   (format t "Restarts: ~{~a~^, ~}~%"
                           (mapcar #'restart-name
                                   (remove-if-not (lambda (r) (member (restart-name r) '(withdraw-available use-value)))
                                                  (compute-restarts c))))
                   (let ((r (find-restart 'withdraw-available c)))
                     (format t "Report: ~a~%" r)
                     (invoke-restart r)))))
  (withdraw (gethash "A-1" *accounts*) 5000))

;; ignore-errors, multiple values
(multiple-value-bind (val err) (ignore-errors (deposit (gethash "A-1" *accounts*) -5))
  (format t "val=~a type-error? ~a~%" val (typep err (quote type-error))))

(multiple-value-bind (val err) (ignore-errors (error "plain ~a" 'failure))
  (format t "val=~a err=~a~%" val err))

;; unwind-protect and catch/throw
(defun transfer (from to amount)
  (let ((done nil))
    (unwind-protect
         (progn
           (withdraw from amount)
           (deposit to amount)
           (setf done t))
      (format t "Transfer ~a -> ~a of ~a: ~:[FAILED~;ok~]~%"
              (account-id from) (account-id to) amount done))))

(ignore-errors (transfer (gethash "A-1" *accounts*) (gethash "B-2" *accounts*) 20))
(ignore-errors (transfer (gethash "B-2" *accounts*) (gethash "A-1" *accounts*) 2000))

(format t "Result: ~a~%"
        (catch 'found
          (maphash (lambda (k v) (when (< (balance v) 15) (throw 'found k))) *accounts*)
          :none))

;; signal and warn
(define-condition low-balance (warning) ((acct :initarg :acct :reader acct)))
(handler-bind ((warning (lambda (w)
                          (format t "Warning seen for ~a~%" (account-id (acct w)))
                          (muffle-warning w))))
  (loop for id in '("A-1" "B-2" "C-3")
        for a = (gethash id *accounts*)
        when (< (balance a) 60) do (warn 'low-balance :acct a)))

(format t "Signal returns ~a~%" (signal 'low-balance :acct nil))

;; error with a format control
(handler-case (error "Account ~s not found (~d tries)" "Z-9" 3)
  (simple-error (e)
    (format t "~a | ~s~%  ~s~%" e (simple-condition-format-control e)
            (simple-condition-format-arguments e))))

(handler-case (assert (> 1 2) () "Assertion about ~a" 'numbers)
  (error (e) (format t "assert: ~a~%" e)))

(handler-case (ecase 5 (1 :one) (2 :two))
  (type-error (e) (format t "ecase: datum ~a, expected ~s~%" (type-error-datum e) (type-error-expected-type e))))

(dolist (id '("A-1" "B-2" "C-3"))
  (let ((a (gethash id *accounts*)))
    (format t "~a: ~8,2f history ~s~%" (account-owner a) (balance a) (reverse (history a)))))
