;;;; definitions.lisp -- prog, symbol macros, load-time-value, compile,
;;;; setf expanders, hash-table iterators, symbols made by name, random states.
(suite "definitions")

;;; prog, prog*
(is-eql (prog ((x 1) (y 2)) (return (+ x y))) 3)
(is-eql (prog (x) (setq x 1) loop (when (> x 10) (return x)) (setq x (* x 2)) (go loop)) 16)
(is-eql (prog ()) nil)
(is-equal (prog* ((x 1) (y (+ x 1))) (return (list x y))) '(1 2))
(is-eql (let ((x 10)) (prog ((x 1) (y x)) (return y))) 10)
(is-eql (prog ((x 1)) (declare (fixnum x)) (return x)) 1)

;;; symbol-macrolet
(is-equal (let ((l (list 1 2))) (symbol-macrolet ((first-of (car l))) (setq first-of 10) (list first-of l)))
          '(10 (10 2)))
(is-equal (let ((l (list 1 2))) (symbol-macrolet ((x (cadr l))) (setf x 'b) (incf (car l)) (list x l)))
          '(b (2 b)))
(is-eql (symbol-macrolet ((x 'outer)) (let ((x 'inner)) x)) 'inner)
(is-eql (symbol-macrolet ((x (+ 1 2))) x) 3)
(is-equalp (let ((v (vector 1 2))) (symbol-macrolet ((a (aref v 0))) (push 0 a) (list a v)))
           (list '(0 . 1) (vector '(0 . 1) 2)))
(is-equal (symbol-macrolet ((x 1) (y 2)) (list x y)) '(1 2))
(is-equal (let ((l (list 5))) (symbol-macrolet ((h (car l))) (multiple-value-setq (h) (values 7)) l)) '(7))

;;; define-symbol-macro
(defvar *dsm-list* (list 1 2 3))
(define-symbol-macro dsm-head (car *dsm-list*))
(is-eql dsm-head 1)
(is-equal (progn (setf dsm-head 'a) *dsm-list*) '(a 2 3))
(is-equal (macroexpand-1 'dsm-head) '(car *dsm-list*))
(is-eql (let ((dsm-head 'shadowed)) dsm-head) 'shadowed)
(defun dsm-reader () dsm-head)
(is-eql (dsm-reader) 'a)

;;; load-time-value
(is-eql (load-time-value (+ 1 2)) 3)
(is-eql (load-time-value 5 t) 5)

;;; compile and function-lambda-expression
(is-eql (funcall (compile nil '(lambda (x) (* x 2))) 21) 42)
(defun to-compile (x) (+ x 1))
(is-eql (compile 'to-compile) 'to-compile)
(is-eql (to-compile 1) 2)
(is-equal (multiple-value-list (compile 'to-compile)) '(to-compile nil nil))
(is (functionp (compile nil #'car)))
(is-eql (third (multiple-value-list (function-lambda-expression #'to-compile))) 'to-compile)
(is (let ((e (function-lambda-expression #'to-compile))) (or (null e) (eq (car e) 'lambda))))
(is (let ((y 1)) (second (multiple-value-list (function-lambda-expression (lambda () y))))))

;;; setf expanders
(defvar *cell* (list 0))
(define-setf-expander cell-value (cell)
  (let ((c (gensym)) (new (gensym)))
    (values (list c) (list cell) (list new)
            `(progn (rplaca ,c ,new) ,new)
            `(car ,c))))
(defun cell-value (cell) (car cell))
(is-eql (setf (cell-value *cell*) 5) 5)
(is-equal *cell* '(5))
(is-eql (incf (cell-value *cell*) 10) 15)
(is-eql (length (multiple-value-list (get-setf-expansion '(cell-value x)))) 5)
(is-eql (length (multiple-value-list (get-setf-expansion 'x))) 5)
(is-equal (let ((a 1) (b 2)) (setf (values a b) (values b a)) (list a b)) '(2 1))
(is-equal (let ((a 1) (b 2)) (list (multiple-value-list (setf (values a b) (values 10))) a b)) '((10 nil) 10 nil))
(is-equal (let ((l (list 1 2))) (setf (values (car l) (cadr l)) (values 'x 'y)) l) '(x y))

;;; with-hash-table-iterator
(is-equal (let ((h (make-hash-table)) (seen nil))
            (setf (gethash 'a h) 1 (gethash 'b h) 2)
            (with-hash-table-iterator (next h)
              (loop (multiple-value-bind (more k v) (next)
                      (unless more (return))
                      (push (cons k v) seen))))
            (sort seen #'string< :key (lambda (e) (symbol-name (car e)))))
          '((a . 1) (b . 2)))
(is-eql (with-hash-table-iterator (next (make-hash-table)) (next)) nil)

;;; copy-symbol, gentemp, gensym
(is (let ((s (copy-symbol 'car))) (and (string= (symbol-name s) "CAR") (not (eq s 'car)))))
(is (let ((s (copy-symbol 'car t))) (fboundp s)))
(is (not (fboundp (copy-symbol 'car))))
(defvar *with-value* 42)
(is-eql (symbol-value (copy-symbol '*with-value* t)) 42)
(is-equal (get (let ((s (make-symbol "P"))) (setf (get s 'k) 'v) (copy-symbol s t)) 'k) 'v)
;; (get s i default) as a place: the default is evaluated, the store ignores it
(is-equal (let ((s (make-symbol "Q")) (ev nil))
            (list (setf (get s :a (progn (setq ev t) 0)) 1) (get s :a) ev (incf (get s :n 10)) (get s :n)))
          '(1 1 t 11 11))
(is (let ((s (gentemp "GT"))) (and (eq s (find-symbol (symbol-name s))) (string= "GT" (subseq (symbol-name s) 0 2)))))
(is (not (eq (gentemp) (gentemp))))
(is-equal (let ((*gensym-counter* 42)) (symbol-name (gensym))) "G42")
(is-equal (let ((*gensym-counter* 42)) (gensym "X") *gensym-counter*) 43)
(is-equal (subseq (symbol-name (gensym "FOO")) 0 3) "FOO")

;;; random states
(is (random-state-p *random-state*))
(is (random-state-p (make-random-state)))
(is (typep (make-random-state t) 'random-state))
(is (let ((a (make-random-state)) (b (make-random-state)))
      (equal (loop repeat 5 collect (random 1000 a)) (loop repeat 5 collect (random 1000 b)))))
(is (let ((s (make-random-state)))
      (let ((first (let ((*random-state* (make-random-state s))) (loop repeat 3 collect (random 100)))))
        (equal first (let ((*random-state* (make-random-state s))) (loop repeat 3 collect (random 100)))))))
(is (< (random 10 (make-random-state t)) 10))
(signals type-error (random 10 'not-a-state))
(signals type-error (make-random-state 'no))

(done)
