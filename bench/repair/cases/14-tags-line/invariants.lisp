(string= (tags-line "P3") "Tags: none")
(= (hash-table-count *products*) 5)
