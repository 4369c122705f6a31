(letter-grade 42)
