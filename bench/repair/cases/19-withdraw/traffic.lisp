(withdraw 1 30)
(withdraw 2 40)
