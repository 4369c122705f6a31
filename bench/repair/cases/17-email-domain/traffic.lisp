(email-domain 1)
(email-domain 2)
(email-domain 3)
