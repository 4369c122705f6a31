(withdraw 2 500)
