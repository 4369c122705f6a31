(((tally '("Ada" "Linus" "Ada")) . "((\"Ada\" . 2) (\"Linus\" . 1) (\"Alan\" . 0) (\"Grace\" . 0))")
 ((tally '("Linus" "Linus" "Ada")) . "((\"Linus\" . 2) (\"Ada\" . 1) (\"Alan\" . 0) (\"Grace\" . 0))")
 ((winner '("Barbara")) . "\"Barbara\"")
 ((tally '("Grace")) . "((\"Grace\" . 1) (\"Ada\" . 0) (\"Alan\" . 0))"))
