;; Request 2 of the sales-tax example: caller-supplied rates.
(:request "Support different tax rates: (total-price PRICE RATE) with RATE an exact fraction such as 8/100; without a rate it stays 5%."
 :goals ((= (total-price 100 5/100) 105)
         (= (total-price 100 8/100) 108)
         (= (total-price 100) 105)))
