;;; An interpreter for arithmetic expressions: tokenizer, recursive-descent
;;; parser, evaluator with variables and functions, and a pretty printer.
(defpackage :calc (:use :cl))
(in-package :calc)

(define-condition calc-error (error) ((msg :initarg :msg :reader msg))
  (:report (lambda (c s) (format s "calc: ~a" (msg c)))))

(defun calc-error (fmt &rest args)
  (error 'calc-error :msg (apply #'format nil fmt args)))

(defun tokenize (s)
  (let ((i 0) (n (length s)) (tokens '()))
    (flet ((peekc () (if (< i n) (char s i) nil)))
      (loop
        (let ((c (peekc)))
          (cond ((null c) (return (nreverse tokens)))
                ((member c '(#\Space #\Tab)) (incf i))
                ((digit-char-p c)
                 (multiple-value-bind (num end) (parse-integer s :start i :junk-allowed t)
                   (if (and (< end n) (char= (char s end) #\.))
                       (let* ((fend (or (position-if-not #'digit-char-p s :start (1+ end)) n))
                              (frac (subseq s (1+ end) fend)))
                         (push (+ num (/ (parse-integer frac) (expt 10 (length frac)))) tokens)
                         (setf i fend))
                       (progn (push num tokens) (setf i end)))))
                ((alpha-char-p c)
                 (let ((end (or (position-if-not #'alphanumericp s :start i) n)))
                   (push (intern (string-upcase (subseq s i end)) :calc) tokens)
                   (setf i end)))
                ((find c "+-*/^(),=") (push c tokens) (incf i))
                (t (calc-error "bad character ~s at ~d" c i))))))))

(defvar *tokens*)

(defun peek-token () (first *tokens*))
(defun next-token () (pop *tokens*))
(defun expect (tok)
  (unless (eql (next-token) tok) (calc-error "expected ~a" tok)))

;; expr := term (('+'|'-') term)* ; term := factor (('*'|'/') factor)* ;
;; factor := unary ('^' factor)? ; unary := '-' unary | primary
(defun parse-expr ()
  (let ((left (parse-term)))
    (loop while (member (peek-token) '(#\+ #\-))
          do (let ((op (next-token)))
               (setf left (list (if (char= op #\+) '+ '-) left (parse-term)))))
    left))

(defun parse-term ()
  (let ((left (parse-factor)))
    (loop while (member (peek-token) '(#\* #\/))
          do (let ((op (next-token)))
               (setf left (list (if (char= op #\*) '* '/) left (parse-factor)))))
    left))

(defun parse-factor ()
  (let ((base (parse-unary)))
    (if (eql (peek-token) #\^)
        (progn (next-token) (list 'expt base (parse-factor)))
        base)))

(defun parse-unary ()
  (if (eql (peek-token) #\-)
      (progn (next-token) (list '- (parse-unary)))
      (parse-primary)))

(defun parse-primary ()
  (let ((tok (next-token)))
    (cond ((numberp tok) tok)
          ((eql tok #\() (prog1 (parse-expr) (expect #\))))
          ((and tok (symbolp tok))
           (if (eql (peek-token) #\()
               (progn
                 (next-token)
                 (let ((args '()))
                   (unless (eql (peek-token) #\))
                     (loop (push (parse-expr) args)
                           (if (eql (peek-token) #\,) (next-token) (return))))
                   (expect #\))
                   (list* 'call tok (nreverse args))))
               tok))
          (t (calc-error "unexpected ~a" (or tok "end of input"))))))

(defun parse (string)
  (let ((*tokens* (tokenize string)))
    (if (and (symbolp (first *tokens*)) (eql (second *tokens*) #\=))
        (let ((name (next-token)))
          (next-token)
          (prog1 (list 'setq name (parse-expr))
            (when *tokens* (calc-error "trailing tokens ~a" *tokens*))))
        (prog1 (parse-expr)
          (when *tokens* (calc-error "trailing tokens ~a" *tokens*))))))

(defvar *env* (make-hash-table))
(defparameter *functions*
  `((sqrt . ,#'isqrt) (max . ,#'max) (min . ,#'min) (abs . ,#'abs)
    (gcd . ,#'gcd) (fact . ,(lambda (n) (if (< n 2) 1 (loop for i from 2 to n for p = i then (* p i) finally (return p)))))))

(defun evaluate (tree)
  (etypecase tree
    (number tree)
    (symbol (multiple-value-bind (v found) (gethash tree *env*)
              (if found v (calc-error "unbound variable ~a" tree))))
    (cons
     (destructuring-bind (op &rest args) tree
       (case op
         (setq (setf (gethash (first args) *env*) (evaluate (second args))))
         (call (let ((f (cdr (assoc (first args) *functions*))))
                 (unless f (calc-error "unknown function ~a" (first args)))
                 (apply f (mapcar #'evaluate (rest args)))))
         (/ (let ((d (evaluate (second args))))
              (when (zerop d) (calc-error "division by zero"))
              (/ (evaluate (first args)) d)))
         (t (apply op (mapcar #'evaluate args))))))))

(defun unparse (tree)
  (cond ((atom tree) (format nil "~(~a~)" tree))
        ((eq (car tree) 'call) (format nil "~(~a~)(~{~a~^, ~})" (second tree) (mapcar #'unparse (cddr tree))))
        ((eq (car tree) 'setq) (format nil "~(~a~) = ~a" (second tree) (unparse (third tree))))
        ((null (cddr tree)) (format nil "-~a" (unparse (second tree))))
        (t (format nil "(~a ~a ~a)" (unparse (second tree))
                   (case (car tree) (expt "^") (t (car tree))) (unparse (third tree))))))

(dolist (line '("1 + 2 * 3" "(1 + 2) * 3" "2 ^ 3 ^ 2" "-4 + 10 / 4" "x = 7" "y = x * 2 - 1"
                "x * y" "fact(20)" "fact(25) / fact(23)" "max(3, x, y) + min(1, 2)" "gcd(84, 36)"
                "sqrt(1000000)" "1.5 * 4" "0.1 + 0.2" "10 / (5 - 5)" "z + 1" "3 $ 4" "(1 + 2"
                "foo(1)" "1 2"))
  (handler-case
      (let* ((tree (parse line))
             (value (evaluate tree)))
        (format t "~30a => ~a~@[ [~a]~]~%" (unparse tree) value
                (and (rationalp value) (not (integerp value)) (format nil "~,4f" value))))
    (calc-error (e) (format t "~30a !! ~a~%" line e))))

(format t "Variables: ~{~a~^ ~}~%"
        (sort (loop for k being the hash-keys of *env* using (hash-value v) collect (format nil "~a=~a" k v)) #'string<))
(format t "Tree: ~s~%" (parse "a * (b + 2) ^ c"))
