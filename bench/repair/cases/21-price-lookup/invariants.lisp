(= (price-of 1001) 250)
(= (length *price-list*) 4)
