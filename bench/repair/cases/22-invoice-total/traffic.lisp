(invoice-total '((:qty 2 :amount "12.50")))
(invoice-total '((:qty 1 :amount "3.99") (:qty 3 :amount "0.50")))
(invoice-total '())
