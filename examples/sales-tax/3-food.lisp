;; Request 3 of the sales-tax example: a rate per kind of item.
(:request "Apply different tax rates to food (2%) and to other items (8%): (total-price PRICE ITEM) with ITEM a keyword such as :food or :clothing; (total-price PRICE RATE) keeps working."
 :goals ((= (total-price 100 :food) 102)
         (= (total-price 100 :clothing) 108)
         (= (total-price 100 8/100) 108)
         (= (total-price 100) 105))
 :invariants ((item-rates-never-negative
               (or (not (fboundp 'tax-rate))
                   (every (lambda (item) (>= (tax-rate item) 0)) '(:food :clothing :books :other))))))
