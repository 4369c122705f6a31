;;; strings: 200,000 formatted strings "item-<i>" written to a string port;
;;; print the final length.  Uses core simple-format (~a only; for an integer
;;; ~a prints the same digits as CL's ~d).
(define (run-strings n)
  (let ((out (call-with-output-string
              (lambda (s)
                (let loop ((i 0))
                  (when (< i n)
                    (display (simple-format #f "~a-~a" "item" i) s)
                    (loop (+ i 1))))))))
    (string-length out)))

(display (run-strings 200000))
(newline)
