(median #(10 20))
