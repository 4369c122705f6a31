(string= (email-domain 1) "example.org")
(= (hash-table-count *emails*) 3)
