(to-teaspoons 1 :tsp)
(to-teaspoons 2 :tbsp)
(to-teaspoons 1/2 :tbsp)
