(((email-domain 42) . "NIL")
 ((email-domain 4) . "NIL")
 ((email-domain 2) . "\"bletchley.example\"")
 ((users-at "example.org" '(1 2 3 42)) . "(1)"))
