;;;; demo.lisp — the interpreter demo (`make demo`).
;;;;
;;;; The sales-tax calculator of the project brief, grown in three steps in
;;;; one running world.  Later issues run the same steps as transactions
;;;; against a kernel daemon with a scripted model; here the interpreter
;;;; evaluates them directly, and shows the condition system at work.

(defun show (label value)
  (format t "~&~a => ~,2f~%" label value))

(format t "~&;; Step 1: a sales-tax calculator with a 5% rate~%")
(defun sales-tax (price) (* price 0.05))
(defun total-price (price) (+ price (sales-tax price)))
(show "total-price 100.00" (total-price 100.00))

(format t "~&;; Step 2: different tax rates~%")
(defun sales-tax (price rate) (* price rate))
(defun total-price (price rate) (+ price (sales-tax price rate)))
(show "total-price 100.00 0.05" (total-price 100.00 0.05))
(show "total-price 100.00 0.08" (total-price 100.00 0.08))

(format t "~&;; Step 3: food and non-food items~%")
(defun rate-for (item-type)
  (case item-type
    (:food 0.02)
    ((:clothing :books :toys) 0.08)
    (t (restart-case (error "unknown item type ~s" item-type)
         (use-value (rate)
           :report "Supply a tax rate for this item."
           rate)))))
(defun total-price (price item-type)
  (+ price (sales-tax price (rate-for item-type))))
(show "total-price 100.00 :food" (total-price 100.00 :food))
(show "total-price 100.00 :clothing" (total-price 100.00 :clothing))

(format t "~&;; An unknown item type signals an error with a USE-VALUE restart;~%")
(format t ";; a handler chooses it, so the computation continues where it stopped:~%")
(show "total-price 100.00 :gadget (rate 0.10 supplied by a handler)"
      (handler-bind ((error (lambda (c)
                              (format t "~&   condition: ~a~%" c)
                              (format t "   restarts:  ~{~a~^, ~}~%"
                                      (mapcar #'restart-name (compute-restarts c)))
                              (use-value 0.10 c))))
        (total-price 100.00 :gadget)))

(format t "~&;; A safety invariant: tax is never negative~%")
(defun tax-never-negative-p ()
  (every (lambda (type) (>= (sales-tax 100 (rate-for type)) 0))
         '(:food :clothing :books)))
(format t "~&invariant holds: ~a~%" (tax-never-negative-p))

(defstruct item name price type)
(let ((cart (list (make-item :name "bread" :price 3.50 :type :food)
                  (make-item :name "shirt" :price 20.00 :type :clothing)
                  (make-item :name "novel" :price 12.00 :type :books))))
  (format t "~&;; A cart of ~d items~%" (length cart))
  (dolist (i cart)
    (format t "~&  ~10a ~8,2f ~8,2f~%" (item-name i) (item-price i)
            (total-price (item-price i) (item-type i))))
  (show "cart total" (reduce #'+ cart :key (lambda (i) (total-price (item-price i) (item-type i))))))
