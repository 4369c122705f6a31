;;; Museum ticket desk.  Prices in euros.

(defparameter *prices* '(:child 5 :adult 12 :senior 7))

(defun ticket-total (age qty)
  "The price of QTY tickets for visitors of AGE: children are under 12,
seniors are 65 and over, everyone else is an adult."
  (* qty (getf *prices*
               (cond ((< age 12) :child)
                     ((> age 65) :senior)
                     ((< age 65) :adult)))))

(defun receipt (age qty)
  (format nil "~d ticket~:p: ~d EUR" qty (ticket-total age qty)))
