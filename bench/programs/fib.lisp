;;; fib: naive doubly-recursive Fibonacci, (fib 30).
;;; Measures: function-call overhead, fixnum arithmetic, comparison.
(defun fib (n)
  (if (< n 2)
      n
      (+ (fib (- n 1)) (fib (- n 2)))))

(format t "~d~%" (fib 30))
