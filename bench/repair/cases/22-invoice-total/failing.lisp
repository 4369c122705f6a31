(invoice-total '((:qty 1 :amount "12.50") (:qty 2 :amount 300)))
