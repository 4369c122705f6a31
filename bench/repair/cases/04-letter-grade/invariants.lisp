(string= (letter-grade 90) "A")
(string= (letter-grade 60) "D")
