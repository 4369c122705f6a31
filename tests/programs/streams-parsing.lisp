;;; Parsing text with string streams: a config-file reader, an INI-style
;;; parser, a word counter, and a tiny S-expression calculator.
(defparameter *config* "# server settings
host = example.org
port = 8080
debug = true

[database]
name = inventory
pool-size = 12
timeout = 2.5
[paths]
root = /srv/app
logs = /var/log/app  ")

(defun trim (s) (string-trim '(#\Space #\Tab) s))

(defun parse-value (s)
  (cond ((string-equal s "true") t)
        ((string-equal s "false") nil)
        ((every #'digit-char-p s) (parse-integer s))
        ((and (find #\. s) (every (lambda (c) (or (digit-char-p c) (char= c #\.))) s))
         (let ((*read-default-float-format* 'single-float)) (read-from-string s)))
        (t s)))

(defun parse-config (text)
  (let ((sections (list (cons "global" '()))))
    (with-input-from-string (in text)
      (loop for raw = (read-line in nil nil)
            for line-no from 1
            while raw
            do (let ((line (trim raw)))
                 (cond ((or (zerop (length line)) (char= (char line 0) #\#)))
                       ((char= (char line 0) #\[)
                        (push (cons (subseq line 1 (position #\] line)) '()) sections))
                       (t (let ((eq (position #\= line)))
                            (if eq
                                (push (cons (trim (subseq line 0 eq)) (parse-value (trim (subseq line (1+ eq)))))
                                      (cdr (first sections)))
                                (format t "line ~d: cannot parse ~s~%" line-no line))))))))
    (mapcar (lambda (s) (cons (car s) (reverse (cdr s)))) (reverse sections))))

(let ((conf (parse-config *config*)))
  (dolist (section conf)
    (format t "[~a]~%" (car section))
    (loop for (key . value) in (cdr section)
          do (format t "  ~15a = ~s (~(~a~))~%" key value (type-of value))))
  (format t "pool-size x2 = ~d~%" (* 2 (cdr (assoc "pool-size" (cdr (assoc "database" conf :test #'string=)) :test #'string=)))))

(defun word-counts (text)
  (let ((counts (make-hash-table :test #'equalp)) (order '()))
    (with-input-from-string (in text)
      (let ((word (make-string-output-stream)))
        (flet ((finish ()
                 (let ((w (get-output-stream-string word)))
                   (when (plusp (length w))
                     (unless (gethash w counts) (push w order))
                     (incf (gethash w counts 0))))))
          (loop for ch = (read-char in nil nil)
                while ch
                do (if (or (alpha-char-p ch) (char= ch #\'))
                       (write-char (char-downcase ch) word)
                       (finish))
                finally (finish)))))
    (mapcar (lambda (w) (cons w (gethash w counts))) (nreverse order))))

(let ((wc (word-counts "It was the best of times, it was the worst of times; it was the age of wisdom...")))
  (format t "~d distinct words~%" (length wc))
  (format t "~{~{~a: ~d~}~^, ~}~%" (mapcar (lambda (p) (list (car p) (cdr p))) wc))
  (format t "Top: ~a~%" (subseq (stable-sort (copy-list wc) #'> :key #'cdr) 0 3)))

(defun tokenize-numbers (s)
  (with-input-from-string (in s)
    (loop for c = (peek-char t in nil nil)
          while c
          if (digit-char-p c)
            collect (let ((n 0))
                      (loop for d = (peek-char nil in nil nil)
                            while (and d (digit-char-p d))
                            do (setf n (+ (* n 10) (digit-char-p (read-char in)))))
                      n)
          else collect (progn (read-char in) c))))

(format t "tokens: ~s~%" (tokenize-numbers "12 + 345*(6 - 78)"))

(defun calc (form)
  (cond ((numberp form) form)
        ((consp form)
         (let ((args (mapcar #'calc (rest form))))
           (case (first form)
             (+ (apply #'+ args)) (- (apply #'- args)) (* (apply #'* args)) (/ (apply #'/ args))
             (max (apply #'max args)) (sqrt (sqrt (first args)))
             (t (error "unknown operator ~a" (first form))))))
        (t (error "bad form ~s" form))))

(dolist (src '("(+ 1 2 3)" "(* (+ 1 2) (- 10 4))" "(/ 22 7)" "(max 3 (sqrt 16) 2)" "(+ 1 (foo 2))" "(+ 1 \"two\")"))
  (handler-case (let ((form (read-from-string src)))
                  (format t "~a => ~a~%" src (calc form)))
    (error (e) (format t "~a => error: ~a~%" src e))))

(with-input-from-string (in "first line
second line
third")
  (format t "~s~%" (read-line in))
  (multiple-value-bind (line missing-newline-p) (read-line in) (format t "~s ~a~%" line missing-newline-p))
  (multiple-value-bind (line missing-newline-p) (read-line in) (format t "~s ~a~%" line missing-newline-p))
  (format t "~s~%" (read-line in nil :eof)))

(let ((s (make-string-output-stream)))
  (write-string "abc" s)
  (write-char #\- s)
  (format s "~d" 42)
  (format t "~s~%" (get-output-stream-string s))
  (format t "~s~%" (get-output-stream-string s)))

(format t "~s~%" (with-output-to-string (out)
                   (with-input-from-string (in "hello world")
                     (loop for c = (read-char in nil) while c do (write-char (char-upcase c) out)))))
(format t "~a~%" (with-input-from-string (in "(a b) 42 \"str\" :key 3.5") (loop for x = (read in nil :done) until (eq x :done) collect (type-of x))))
(handler-case (+ 1 (parse-value "x"))
  (type-error (e) (format t "Error: ~a~%" e)))
(handler-case (* 2 (parse-value (format nil "~{~a~^,~}" (loop for i below 30 collect i))))
  (type-error (e) (format t "Error: ~a~%Datum length: ~a~%" e (length (type-error-datum e)))))
(format t "~{~a: ~a~%~}" (loop for x in (list 0 1 42 -7 (expt 2 64) #\a #\Tab 1.5 "s" 'q)
                              collect (prin1-to-string x) collect (type-of x)))
