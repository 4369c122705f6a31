;;; Product catalogue: the line of tags shown under each product.

(defvar *products* (make-hash-table :test #'equal))

(defun add-product (sku name tags)
  (setf (gethash sku *products*) (list :name name :tags tags)))

(add-product "P1" "Kettle" '("kitchen" "electric"))
(add-product "P2" "Mug" '("kitchen"))
(add-product "P3" "Lamp" '())
;; Imported from the old catalogue, which stored a single tag as a string.
(add-product "P4" "Desk" "office")
(add-product "P5" "Chair" "office")

(defun tags-line (sku)
  "\"Tags: a, b\" for the product's tags, \"Tags: none\" when it has none."
  (let ((tags (getf (gethash sku *products*) :tags)))
    (if tags
        (format nil "Tags: ~{~a~^, ~}" tags)
        "Tags: none")))
