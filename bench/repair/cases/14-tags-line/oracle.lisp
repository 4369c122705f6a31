(((tags-line "P4") . "\"Tags: office\"")
 ((tags-line "P5") . "\"Tags: office\"")
 ((tags-line "P1") . "\"Tags: kitchen, electric\"")
 ((tags-line "P3") . "\"Tags: none\""))
