;;; Payment processing fees, in cents.
;;;
;;; The fee schedule: card payments 30 cents plus 2.9% of the amount; bank
;;; transfers (ACH) a flat 25 cents; wallet payments 1.5% of the amount,
;;; with no fixed part.  Every fee is rounded to the nearest cent.  Any
;;; other method is refused.

(defstruct payment id method amount)

(defun processing-fee (method amount)
  (round (ecase method
           (:card (+ 30 (* amount 29/1000)))
           (:ach 25))))

(defun net-amount (payment)
  (- (payment-amount payment)
     (processing-fee (payment-method payment) (payment-amount payment))))
