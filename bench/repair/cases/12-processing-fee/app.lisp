;;; Payment processing fees, in cents.

(defstruct payment id method amount)

(defun processing-fee (method amount)
  "The fee in cents for a payment of AMOUNT cents by METHOD, by the fee
schedule: :CARD 30 cents plus 2.9% of the amount; :ACH (bank transfer) a
flat 25 cents; :WALLET 1.5% of the amount, with no fixed part.  Fees are
rounded to the nearest cent; any other method is refused."
  (round (ecase method
           (:card (+ 30 (* amount 29/1000)))
           (:ach 25))))

(defun net-amount (payment)
  (- (payment-amount payment)
     (processing-fee (payment-method payment) (payment-amount payment))))
