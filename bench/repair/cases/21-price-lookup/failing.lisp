(price-of "X-9")
