(= (ticket-total 8 1) 5)
(= (ticket-total 40 2) 24)
