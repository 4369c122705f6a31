(leg-km '(:m 800))
