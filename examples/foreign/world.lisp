;;; A small world that calls C: the cosine and power of the C maths library
;;; (libm) and strlen of the C library (libc), declared with define-foreign.
;;; Applied by the operator (jiti apply) with both libraries granted.

(define-foreign c-cos "libm.so.6" "cos" :double (:double))
(define-foreign c-pow "libm.so.6" "pow" :double (:double :double))
(define-foreign c-strlen "libc.so.6" "strlen" :size (:string))

;; The horizontal reach of a ladder of length LEN leaning at ANGLE degrees
;; from the ground.
(defun reach (len angle)
  (* len (c-cos (* angle (/ pi 180)))))

;; PRINCIPAL after YEARS of interest at RATE, compounded yearly.
(defun compound (principal rate years)
  (* principal (c-pow (+ 1 rate) years)))

;; The bytes a string takes in UTF-8 (what C sees), against its characters.
(defun utf8-bytes (s) (c-strlen s))

(world-put :savings (compound 1000 0.05d0 10))
