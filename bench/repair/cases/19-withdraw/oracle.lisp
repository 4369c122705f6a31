(((withdraw 2 500) . :error)
 ((withdraw 1 71) . :error)
 ((gethash 1 *balances*) . "70")
 ((withdraw 1 20) . "50"))
