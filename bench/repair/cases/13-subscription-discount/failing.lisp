(monthly-charge "acme")
