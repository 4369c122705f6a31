;;; list: build a 1,000,000-element list, map 1+ over it, sum it; 5 times.
(define (build-list n)
  (let loop ((i 0) (l '()))
    (if (< i n)
        (loop (+ i 1) (cons i l))
        l)))

(define (sum-list l)
  (let loop ((l l) (s 0))
    (if (null? l)
        s
        (loop (cdr l) (+ s (car l))))))

(define (run-list reps n)
  (let loop ((r 0) (total 0))
    (if (< r reps)
        (loop (+ r 1) (+ total (sum-list (map 1+ (build-list n)))))
        total)))

(display (run-list 5 1000000))
(newline)
