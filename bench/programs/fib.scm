;;; fib: naive doubly-recursive Fibonacci, (fib 30).
(define (fib n)
  (if (< n 2)
      n
      (+ (fib (- n 1)) (fib (- n 2)))))

(display (fib 30))
(newline)
