;;; Number sequences printed whole, as models print them: long lists wrap
;;; the way SBCL's pretty printer wraps them.
(defun primes-below (n)
  (let ((sieve (make-array n :element-type 'bit :initial-element 1)))
    (loop for i from 2 below n
          when (= 1 (sbit sieve i))
            collect i
            and do (loop for j from (* i i) below n by i do (setf (sbit sieve j) 0)))))

(defun fibonacci (n)
  (loop for a = 0 then b and b = 1 then (+ a b) repeat n collect a))

(defun collatz (n)
  (loop collect n until (= n 1) do (setf n (if (evenp n) (/ n 2) (1+ (* 3 n))))))

(defun digits (n) (map 'list #'digit-char-p (princ-to-string n)))

(defstruct (stats (:constructor make-stats (name values)))
  name values (count 0) (total 0))

(format t "Primes below 200: ~a~%" (primes-below 200))
(print (fibonacci 40))
(terpri)
(format t "Collatz 27 (~d steps):~%~a~%" (1- (length (collatz 27))) (collatz 27))
(format t "~s~%" (mapcar (lambda (n) (cons n (length (collatz n)))) '(3 7 9 27 97 871 6171)))
(format t "Digits of 2^100: ~a~%" (digits (expt 2 100)))
(format t "Factorials: ~a~%" (loop for i from 1 to 25 for f = 1 then (* f i) collect f))
(let ((s (make-stats "squares" (loop for i from 1 to 30 collect (* i i)))))
  (setf (stats-count s) (length (stats-values s))
        (stats-total s) (reduce #'+ (stats-values s)))
  (print s)
  (terpri))
(print (coerce (primes-below 120) 'vector))
(terpri)
(print (make-array '(4 8) :initial-contents (loop for r below 4 collect (loop for c below 8 collect (* (1+ r) (1+ c) 111)))))
(terpri)
(format t "Triangular: ~{~a~^ ~}~%" (loop for i from 1 to 40 collect (/ (* i (1+ i)) 2)))
(format t "Words: ~s~%" '("alpha" "bravo" "charlie" "delta" "echo" "foxtrot" "golf" "hotel" "india" "juliet" "kilo"))
(format t "Pairs: ~a~%" (loop for i from 1 to 15 collect (list i (* i i) (* i i i))))
(write-line (prin1-to-string (loop for i below 30 collect (code-char (+ 65 (mod i 26))))))
(format t "No pretty: ~a~%" (let ((*print-pretty* nil)) (format nil "~a" (fibonacci 30))))
