;;; tak: (tak 18 12 6) repeated 65 times, results summed.
(define (tak x y z)
  (if (not (< y x))
      z
      (tak (tak (- x 1) y z)
           (tak (- y 1) z x)
           (tak (- z 1) x y))))

(define (run-tak times)
  (let loop ((i 0) (sum 0))
    (if (< i times)
        (loop (+ i 1) (+ sum (tak 18 12 6)))
        sum)))

(display (run-tak 65))
(newline)
