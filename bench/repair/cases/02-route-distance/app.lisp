;;; Trip planner: the length of a route whose legs come from several map
;;; providers, each reporting in its own unit.

(defparameter *max-leg-km* 1000
  "No single leg is longer than this; a longer one is a data error.")

(defun leg-km (leg)
  "The length in kilometres of LEG, a list (UNIT AMOUNT) where UNIT is
:KM, :M (metres) or :MI (miles)."
  (destructuring-bind (unit amount) leg
    (let ((km (ecase unit
                (:km amount)
                (:m (* amount 1000))
                (:mi (* amount 1609/1000)))))
      (when (> km *max-leg-km*)
        (error "implausible leg ~s: ~a km" leg km))
      km)))

(defun route-km (legs)
  (reduce #'+ legs :key #'leg-km))

(defun route-summary (legs)
  (format nil "~d legs, ~,1f km" (length legs) (route-km legs)))
