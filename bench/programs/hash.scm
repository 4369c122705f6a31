;;; hash: 1,000,000 inserts (keys i*31) into an eqv hash table, then
;;; 1,000,000 lookups, summing the values.
(define (run-hash n)
  (let ((h (make-hash-table)))
    (let ins ((i 0))
      (when (< i n)
        (hashv-set! h (* i 31) i)
        (ins (+ i 1))))
    (let look ((i 0) (sum 0))
      (if (< i n)
          (look (+ i 1) (+ sum (hashv-ref h (* i 31) 0)))
          sum))))

(display (run-hash 1000000))
(newline)
