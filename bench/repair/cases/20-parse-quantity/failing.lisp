(parse-quantity "lots")
