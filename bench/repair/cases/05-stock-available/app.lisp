;;; Warehouse stock and reservations.

(defvar *stock* (make-hash-table :test #'equal))

(defun restock (sku n)
  (incf (gethash sku *stock* 0) n))

(restock "BOLT-M6" 500)
(restock "NUT-M6" 350)
(restock "WASHER-M6" 0)

(defun available-p (sku qty)
  "True when QTY units of SKU can be reserved now.  A SKU the warehouse
does not stock is never available, not even zero units of it."
  (>= (gethash sku *stock*) qty))

(defun reserve (sku qty)
  (unless (available-p sku qty)
    (error "cannot reserve ~a x ~a" qty sku))
  (decf (gethash sku *stock*) qty))
