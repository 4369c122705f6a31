(tags-line "P4")
