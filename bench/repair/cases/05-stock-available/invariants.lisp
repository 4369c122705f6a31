(every (lambda (sku) (>= (gethash sku *stock*) 0)) '("BOLT-M6" "NUT-M6" "WASHER-M6"))
(null (ignore-errors (available-p "NO-SUCH-SKU" 0)))
