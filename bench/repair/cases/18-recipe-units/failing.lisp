(to-teaspoons 1/2 :cup)
