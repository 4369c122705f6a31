;;; The order form: what the customer typed in the quantity box.

(defun parse-quantity (text)
  "The quantity in TEXT, a whole number from 1 to 99 (spaces around it are
fine).  Anything else signals an error whose message the form shows next
to the box."
  (let ((n (parse-integer text :junk-allowed t)))
    (unless (and n (<= 1 n 99))
      (error "Please enter a quantity from 1 to 99 (got ~s)." text))
    n))

(defun order-line (sku text)
  (list sku (parse-quantity text)))
