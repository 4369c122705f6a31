(every (lambda (account) (>= (gethash account *balances*) 0)) '(1 2))
