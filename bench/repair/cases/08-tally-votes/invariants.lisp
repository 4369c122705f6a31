(equal (tally '("Alan")) '(("Alan" . 1) ("Ada" . 0) ("Grace" . 0)))
(= (length (tally '())) 3)
