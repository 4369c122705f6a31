(join-tags '("lisp"))
(join-tags #("repl"))
