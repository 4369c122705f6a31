(statement-line 3)
(statement-line 4)
