;;; Bank ledger.  Overdrafts are not allowed: WITHDRAW signals
;;; INSUFFICIENT-FUNDS, which the teller's screen catches and shows to the
;;; customer; nothing is withdrawn then.

(define-condition insufficient-funds (error)
  ((account :initarg :account :reader insufficient-account)
   (missing :initarg :missing :reader insufficient-missing))
  (:report (lambda (c s)
             (format s "account ~a is ~a short"
                     (insufficient-account c) (insufficient-missing c)))))

(defvar *balances* (make-hash-table))

(setf (gethash 1 *balances*) 100)
(setf (gethash 2 *balances*) 40)

(defun withdraw (account amount)
  "Take AMOUNT from ACCOUNT and return the new balance.  Overdrafts are not
allowed: when the balance is short, signal INSUFFICIENT-FUNDS (the teller's
screen shows it) and take nothing."
  (let ((balance (gethash account *balances* 0)))
    (when (> amount balance)
      (error 'insufficient-funds :account account :missing (- amount balance)))
    (setf (gethash account *balances*) (- balance amount))))
