(parse-quantity "3")
(parse-quantity " 12 ")
(parse-quantity "99")
