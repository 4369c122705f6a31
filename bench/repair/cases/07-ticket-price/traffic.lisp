(ticket-total 8 2)
(ticket-total 30 1)
(ticket-total 70 3)
(ticket-total 64 1)
