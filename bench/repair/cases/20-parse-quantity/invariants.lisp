(= (parse-quantity "12") 12)
(null (ignore-errors (parse-quantity "0")))
