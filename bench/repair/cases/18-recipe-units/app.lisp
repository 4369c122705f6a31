;;; Recipe scaling.  Quantities are kept in teaspoons:
;;; 1 tablespoon = 3 teaspoons, 1 cup = 16 tablespoons = 48 teaspoons.

(defun to-teaspoons (qty unit)
  "QTY of UNIT in teaspoons: UNIT is :TSP, :TBSP (3 teaspoons) or :CUP (48
teaspoons)."
  (* qty (case unit
           (:tsp 1)
           (:tbsp 3))))

(defun scale-ingredient (ingredient factor)
  "INGREDIENT is (NAME QTY UNIT); the scaled quantity in teaspoons."
  (destructuring-bind (name qty unit) ingredient
    (list name (* factor (to-teaspoons qty unit)))))
