;;; Customer accounts kept in memory and listed on monthly statements.

(defclass account ()
  ((id :initarg :id :reader account-id)
   (owner :initarg :owner :reader account-owner)
   (balance :initarg :balance :initform 0 :accessor account-balance)))

(defvar *accounts* (make-hash-table))

(defun open-account (id owner &optional (balance 0))
  (setf (gethash id *accounts*)
        (make-instance 'account :id id :owner owner :balance balance)))

(open-account 1 "Ada" 120)
(open-account 2 "Grace" 75)

;; Version 2: accounts in several currencies.  Every account opened before
;; this change is in US dollars.
(defclass account ()
  ((id :initarg :id :reader account-id)
   (owner :initarg :owner :reader account-owner)
   (balance :initarg :balance :initform 0 :accessor account-balance)
   (currency :initarg :currency :reader account-currency)))

(defun open-account (id owner &optional (balance 0) (currency "USD"))
  (setf (gethash id *accounts*)
        (make-instance 'account :id id :owner owner :balance balance :currency currency)))

(open-account 3 "Edsger" 300 "EUR")
(open-account 4 "Barbara" 42 "GBP")

(defun statement-line (id)
  "One line of the monthly statement: owner, balance and currency.  Accounts
opened before accounts had a currency are in US dollars."
  (let ((a (gethash id *accounts*)))
    (format nil "~a: ~a ~a" (account-owner a) (account-balance a) (account-currency a))))
