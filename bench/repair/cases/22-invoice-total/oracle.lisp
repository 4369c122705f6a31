(((invoice-total '((:qty 1 :amount "12.50") (:qty 2 :amount 300))) . "1850")
 ((invoice-total '((:qty 3 :amount 199))) . "597")
 ((invoice-total '((:qty 2 :amount "12.50"))) . "2500")
 ((invoice-summary '((:qty 1 :amount 1005) (:qty 1 :amount "0.05"))) . "\"2 lines, 10.10\""))
