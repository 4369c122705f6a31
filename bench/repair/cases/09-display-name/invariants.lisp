(stringp (display-name 3))
(= (hash-table-count *users*) 3)
