(string= (statement-line 3) "Edsger: 300 EUR")
(= (hash-table-count *accounts*) 4)
