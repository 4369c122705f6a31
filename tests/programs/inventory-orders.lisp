;;; An inventory and order system with CLOS, method combination and hash tables.
(defpackage :shop (:use :cl))
(in-package :shop)

(defclass product ()
  ((sku :initarg :sku :reader sku)
   (name :initarg :name :reader name)
   (price :initarg :price :accessor price)
   (stock :initarg :stock :initform 0 :accessor stock))
  (:documentation "Something we sell."))

(defclass perishable (product)
  ((days-left :initarg :days-left :accessor days-left)))

(defclass taxable () ((tax-rate :initarg :tax-rate :initform 1/10 :reader tax-rate)))
(defclass electronics (product taxable)
  ((warranty :initarg :warranty :initform 12 :reader warranty)))

(defmethod print-object ((p product) stream)
  (print-unreadable-object (p stream :type t)
    (format stream "~a ~s" (sku p) (name p))))

(defgeneric unit-price (product quantity)
  (:documentation "Price of one unit when buying QUANTITY."))

(defmethod unit-price ((p product) quantity)
  (if (>= quantity 10) (* (price p) 9/10) (price p)))

(defmethod unit-price ((p perishable) quantity)
  (let ((base (call-next-method)))
    (if (< (days-left p) 3) (/ base 2) base)))

(defmethod unit-price :around ((p taxable) quantity)
  (let ((net (call-next-method)))
    (* net (+ 1 (tax-rate p)))))

(defgeneric describe-product (p)
  (:method ((p product)) (format nil "~a" (name p)))
  (:method ((p perishable)) (format nil "~a (~d days left)" (call-next-method) (days-left p)))
  (:method ((p electronics)) (format nil "~a, ~d months warranty" (call-next-method) (warranty p))))

(defvar *log* '())
(defgeneric reserve (product qty))
(defmethod reserve :before ((p product) qty)
  (push (format nil "check ~a x~d" (sku p) qty) *log*)
  (when (> qty (stock p))
    (error "Not enough ~a: want ~d, have ~d" (name p) qty (stock p))))
(defmethod reserve ((p product) qty)
  (decf (stock p) qty))
(defmethod reserve :after ((p product) qty)
  (push (format nil "reserved ~a x~d, ~d left" (sku p) qty (stock p)) *log*))

(defvar *catalog* (make-hash-table :test #'equal))

(defun add-product (class &rest initargs)
  (let ((p (apply #'make-instance class initargs)))
    (setf (gethash (sku p) *catalog*) p)))

(add-product 'product :sku "P100" :name "Pencil" :price 1/2 :stock 500)
(add-product 'perishable :sku "F200" :name "Milk" :price 3/2 :stock 20 :days-left 2)
(add-product 'perishable :sku "F201" :name "Cheese" :price 7 :stock 5 :days-left 30)
(add-product 'electronics :sku "E300" :name "Radio" :price 40 :stock 3 :warranty 24)
(add-product 'electronics :sku "E301" :name "Cable" :price 5 :stock 100 :tax-rate 1/5)

(defstruct (order-line (:conc-name line-)) sku qty)
(defstruct order (id 0 :type integer) (lines '()) (status :new))

(defun order-total (order)
  (loop for line in (order-lines order)
        for p = (gethash (line-sku line) *catalog*)
        sum (* (line-qty line) (unit-price p (line-qty line)))))

(defun place-order (order)
  (handler-case
      (progn
        (dolist (line (order-lines order))
          (reserve (gethash (line-sku line) *catalog*) (line-qty line)))
        (setf (order-status order) :placed))
    (error (e)
      (setf (order-status order) :rejected)
      (format t "Order ~d rejected: ~a~%" (order-id order) e)))
  order)

(defun make-lines (&rest pairs)
  (loop for (sku qty) on pairs by #'cddr collect (make-order-line :sku sku :qty qty)))

(let ((orders (list (make-order :id 1 :lines (make-lines "P100" 12 "F200" 2))
                    (make-order :id 2 :lines (make-lines "E300" 1 "E301" 10 "F201" 1))
                    (make-order :id 3 :lines (make-lines "E300" 5)))))
  (dolist (o orders)
    (place-order o)
    (format t "Order ~d: ~(~a~), total ~,2f (exact ~a)~%" (order-id o) (order-status o)
            (order-total o) (order-total o))))

(format t "~%Log:~%~{  ~a~%~}" (reverse *log*))

(format t "~%Catalog:~%")
(let ((products (loop for p being the hash-values of *catalog* collect p)))
  (dolist (p (sort products #'< :key #'price))
    (format t "  ~a | ~a | stock ~d~%" p (describe-product p) (stock p)))
  (format t "Value of stock: ~,2f~%" (reduce #'+ products :key (lambda (p) (* (price p) (stock p)))))
  (format t "Classes: ~{~a~^, ~}~%" (remove-duplicates (mapcar (lambda (p) (class-name (class-of p))) products)))
  (format t "Taxable: ~{~a~^, ~}~%" (mapcar #'name (remove-if-not (lambda (p) (typep p 'taxable)) products))))

(with-slots (name stock) (gethash "F201" *catalog*)
  (setf stock (+ stock 10))
  (format t "~a now ~d~%" name stock))

(with-accessors ((p price) (n name)) (gethash "P100" *catalog*)
  (setf p 3/4)
  (format t "~a costs ~a~%" n p))

(format t "slot-exists ~a boundp ~a~%" (slot-exists-p (gethash "P100" *catalog*) 'days-left)
        (slot-boundp (gethash "F200" *catalog*) 'days-left))
(handler-case (days-left (gethash "P100" *catalog*))
  (error () (format t "No days-left for a pencil~%")))
(format t "~a~%" (documentation 'product 'type))
(format t "~a~%" (documentation #'unit-price t))

(defgeneric greet (x))
(defmethod greet ((x (eql :admin))) "welcome back, admin")
(defmethod greet ((x symbol)) (format nil "hello ~(~a~)" x))
(defmethod greet ((x string)) (format nil "hi ~a" x))
(defmethod greet ((x integer)) (format nil "user #~d" x))
(defmethod greet ((x t)) "who are you?")
(format t "~{~a~%~}" (mapcar #'greet (list :admin :bob "Ann" 42 3.5 nil)))
