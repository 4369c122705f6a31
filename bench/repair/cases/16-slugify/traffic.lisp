(slugify "Lisp")
(slugify " Macros ")
(slugify :notes)
