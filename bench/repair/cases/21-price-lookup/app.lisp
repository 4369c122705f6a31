;;; Point of sale: prices by product code, in cents.  The old products have
;;; numeric codes; the newer ones have codes like "X-9".

(defparameter *price-list*
  (list (cons 1001 250)
        (cons 1002 400)
        (cons "X-9" 1299)
        (cons "X-10" 1599)))

(defun price-of (code)
  "The price in cents of the product CODE: a number for the old products, a
string such as \"X-9\" for the newer ones.  An unknown code is an error:
the cashier must check it."
  (or (cdr (assoc code *price-list*))
      (error "unknown product code ~s" code)))

(defun basket-total (codes)
  (reduce #'+ codes :key #'price-of))
