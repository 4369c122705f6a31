(= (processing-fee :ach 100) 25)
(plusp (processing-fee :card 1))
