(statement-line 1)
