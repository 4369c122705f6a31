(= (leg-km '(:km 5)) 5)
(= (route-km '((:km 1) (:mi 1000/1609))) 2)
