(((display-name 2) . "\"Alan Turing\"")
 ((display-name 1) . "\"Countess\"")
 ((display-name 3) . "\"Amazing grac\""))
