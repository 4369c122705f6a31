;;; Search results, shown a page at a time.

(defparameter *page-size* 3)

(defun page (items n)
  "Page N (from 0) of ITEMS, a list, vector or string, *PAGE-SIZE* items to
a page: the last page may be shorter, and a page past the end is empty."
  (subseq items (* n *page-size*) (* (1+ n) *page-size*)))

(defun page-count (items)
  (ceiling (length items) *page-size*))
