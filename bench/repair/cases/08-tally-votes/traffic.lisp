(tally '("Ada" "Grace" "Ada"))
(tally '())
(tally '("Grace"))
