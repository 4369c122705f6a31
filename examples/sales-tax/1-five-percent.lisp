;; Request 1 of the sales-tax example (README.md beside this file).
;; The invariants hold in every world, also before the functions exist.
(:request "Create a sales-tax calculator using a 5% tax rate: (total-price PRICE) is PRICE plus its tax."
 :goals ((= (total-price 100) 105)
         (= (total-price 0) 0))
 :invariants ((tax-never-negative
               (or (not (fboundp 'sales-tax))
                   (every (lambda (price) (>= (sales-tax price) 0)) '(0 1 100 12345))))
              (total-never-below-price
               (or (not (fboundp 'total-price))
                   (every (lambda (price) (>= (total-price price) price)) '(0 1 100 12345))))))
