(join-tags '("lisp" "repl"))
