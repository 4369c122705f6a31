;;; Invoices.  Lines come from the web form, where amounts are text such
;;; as "12.50", or from the API, where amounts are already integers of
;;; cents.

(defun parse-amount (text)
  "\"12.50\" gives 1250 (cents); the text always has two decimals."
  (let ((dot (position #\. text)))
    (+ (* 100 (parse-integer text :end dot))
       (parse-integer text :start (1+ dot)))))

(defun invoice-total (lines)
  "The total in cents of LINES, each a plist (:QTY N :AMOUNT A), where A is
text such as \"12.50\" (from the web form) or an integer of cents (from
the API)."
  (loop for line in lines
        sum (* (getf line :qty) (parse-amount (getf line :amount)))))

(defun invoice-summary (lines)
  (multiple-value-bind (euros cents) (floor (invoice-total lines) 100)
    (format nil "~d line~:p, ~d.~2,'0d" (length lines) euros cents)))
