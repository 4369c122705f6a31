(tally '("Ada" "Linus" "Ada"))
