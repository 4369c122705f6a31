;;; hash: 1,000,000 inserts into an EQL hash table with integer keys (i*31,
;;; spread out so no implementation can treat the keys as a dense array),
;;; then 1,000,000 lookups of the same keys, summing the values.
;;; Measures: hash-table insert/grow/lookup on fixnum keys.
(defun run-hash (n)
  (let ((h (make-hash-table))
        (sum 0))
    (dotimes (i n)
      (setf (gethash (* i 31) h) i))
    (dotimes (i n)
      (setq sum (+ sum (gethash (* i 31) h))))
    sum))

(format t "~d~%" (run-hash 1000000))
