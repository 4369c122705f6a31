(email-domain 42)
