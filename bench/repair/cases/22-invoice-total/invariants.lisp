(= (parse-amount "0.99") 99)
(= (invoice-total '()) 0)
