;;;; A vending machine: products in slots, coins, credit, change.
;;;; DISPENSE has a bug on purpose: it computes the change the wrong way
;;;; round, so a customer who pays more than the price gets an error
;;;; instead of the product (paying the exact price works).  PRICE-LABEL,
;;;; what the display shows, has a quieter one: a price of whole dollars or
;;;; fewer than ten cents reads wrong ("$1.0"), and nothing signals it.

(define-condition insufficient-credit (error)
  ((needed :initarg :needed :reader needed)
   (credit :initarg :credit :reader credit))
  (:report (lambda (c stream)
             (format stream "insufficient credit: ~a cents needed, ~a inserted"
                     (needed c) (credit c)))))

(defclass product ()
  ((name :initarg :name :reader product-name)
   (price :initarg :price :reader product-price)     ; cents
   (stock :initarg :stock :accessor product-stock)))

(defclass machine ()
  ((slots :initform (make-hash-table :test #'equal) :reader machine-slots)
   (credit :initform 0 :accessor machine-credit)
   (sales :initform 0 :accessor machine-sales)))

(defvar *machine* (make-instance 'machine))

(defun stock-product (code name price count)
  (setf (gethash code (machine-slots *machine*))
        (make-instance 'product :name name :price price :stock count))
  code)

(defun insert-coin (cents)
  (unless (member cents '(5 10 25 100))
    (error "not a coin: ~a" cents))
  (incf (machine-credit *machine*) cents))

(defun change-coins (cents)
  "The coins that make CENTS of change, largest first."
  (when (minusp cents)
    (error "cannot give negative change: ~a cents" cents))
  (loop for coin in '(100 25 10 5)
        nconc (loop repeat (floor cents coin) collect coin)
        do (setf cents (mod cents coin))))

(defun dispense (code)
  "Sell the product in slot CODE: its name and the change, as coins."
  (let ((product (gethash code (machine-slots *machine*))))
    (unless product
      (error "no product in slot ~a" code))
    (let ((price (product-price product))
          (credit (machine-credit *machine*)))
      (when (< credit price)
        (error 'insufficient-credit :needed price :credit credit))
      (when (zerop (product-stock product))
        (error "~a is sold out" (product-name product)))
      (decf (product-stock product))
      (incf (machine-sales *machine*) price)
      (setf (machine-credit *machine*) 0)
      (list (product-name product) (change-coins (- price credit))))))

(defun price-label (code)
  "What the display shows for slot CODE: the product and its price."
  (let ((product (gethash code (machine-slots *machine*))))
    (unless product
      (error "no product in slot ~a" code))
    (multiple-value-bind (dollars cents) (floor (product-price product) 100)
      (format nil "~a: $~d.~d" (product-name product) dollars cents))))

(stock-product "A1" "cola" 150 10)
(stock-product "A2" "water" 100 10)
(stock-product "B1" "crisps" 75 5)
