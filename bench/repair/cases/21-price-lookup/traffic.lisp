(price-of 1001)
(price-of 1002)
