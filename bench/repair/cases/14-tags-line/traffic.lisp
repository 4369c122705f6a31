(tags-line "P1")
(tags-line "P2")
(tags-line "P3")
