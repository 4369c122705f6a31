(= (to-teaspoons 2 :tbsp) 6)
(equal (scale-ingredient '("salt" 1 :tsp) 2) '("salt" 2))
