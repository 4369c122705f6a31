(leg-km '(:km 12))
(leg-km '(:mi 10))
(leg-km '(:km 5/2))
(leg-km '(:m 0))
