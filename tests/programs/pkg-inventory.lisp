;;; An inventory kept in its own package, as a model would write it.
(defpackage :inventory
  (:use :cl)
  (:export #:make-store #:add-item #:remove-item #:item-count #:report #:total-value))

(in-package :inventory)

(defstruct item name (quantity 0) (price 0))

(defun make-store () (make-hash-table :test #'equal))

(defun add-item (store name quantity price)
  (let ((it (gethash name store)))
    (if it
        (incf (item-quantity it) quantity)
        (setf (gethash name store) (make-item :name name :quantity quantity :price price)))
    (item-quantity (gethash name store))))

(defun remove-item (store name quantity)
  (let ((it (gethash name store)))
    (cond ((null it) (error "no item named ~a" name))
          ((< (item-quantity it) quantity)
           (error "only ~d of ~a left" (item-quantity it) name))
          (t (decf (item-quantity it) quantity)))))

(defun item-count (store) (hash-table-count store))

(defun total-value (store)
  (let ((sum 0))
    (maphash (lambda (k v) (declare (ignore k)) (incf sum (* (item-quantity v) (item-price v)))) store)
    sum))

(defun report (store)
  (let ((names (sort (loop for k being the hash-keys of store collect k) #'string<)))
    (dolist (n names)
      (let ((it (gethash n store)))
        (format t "~&~10a ~4d x ~6,2f~%" n (item-quantity it) (item-price it))))))

(defpackage :shop-app
  (:use :cl :inventory))

(in-package :shop-app)

(defvar *store* (make-store))

(add-item *store* "apple" 10 0.5)
(add-item *store* "pear" 4 0.75)
(add-item *store* "apple" 5 0.5)
(remove-item *store* "pear" 1)
(report *store*)
(format t "items: ~d, value: ~,2f~%" (item-count *store*) (total-value *store*))
(handler-case (remove-item *store* "plum" 1)
  (error (e) (format t "error: ~a~%" e)))
(handler-case (remove-item *store* "pear" 10)
  (error (e) (format t "error: ~a~%" e)))
(format t "~a ~a~%" (package-name (symbol-package 'add-item)) (package-name *package*))
(format t "~s~%" (list 'inventory::item-price (find-symbol "REPORT" :inventory)))
(multiple-value-bind (sym status) (find-symbol "MAKE-ITEM" :inventory)
  (format t "~s ~s~%" sym status))
