(ticket-total 65 2)
