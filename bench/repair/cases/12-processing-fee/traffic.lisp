(processing-fee :card 1000)
(processing-fee :ach 5000)
(processing-fee :card 1999)
