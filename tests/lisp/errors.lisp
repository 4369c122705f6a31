;;;; errors.lisp -- runtime errors signal their Common Lisp types; the condition system.
(suite "errors")

(defun err-type (thunk)
  "The type name of the error THUNK signals, or :none."
  (handler-case (progn (funcall thunk) :none)
    (error (c) (type-of c))))

(defun err-one-arg (x) x)

;;; type-error
(signals type-error (car 1))
(signals type-error (+ 'a 1))
(signals type-error (- "5" 1))
(signals type-error (aref #(1) 5))
(signals type-error (aref '(1) 0))
(signals type-error (length 'sym))
(signals type-error (symbol-name "str"))
(signals type-error (funcall 1))
(signals type-error (char-upcase 65))
(signals type-error (ecase 5 (1 'a) (2 'b)))
(signals type-error (etypecase "x" (integer 1) (symbol 2)))
(signals type-error (elt '(1 2) 5))
(signals type-error (svref (vector 1 2) 2))
(signals type-error (error 'type-error :datum 1 :expected-type 'list))

;;; unbound-variable, undefined-function
(signals unbound-variable (eval 'err-unbound-thing))
(signals unbound-variable (symbol-value 'err-unbound-thing))
(signals undefined-function (funcall 'err-no-such-fn))
(signals undefined-function (eval '(err-no-such-fn 1 2)))
(signals undefined-function (apply 'err-no-such-fn '()))
(signals cell-error (eval 'err-unbound-thing))
(is-eql (handler-case (eval 'err-unbound-thing) (unbound-variable (c) (cell-error-name c))) 'err-unbound-thing)
(is-eql (handler-case (funcall 'err-no-such-fn) (undefined-function (c) (cell-error-name c))) 'err-no-such-fn)

;;; program-error: wrong argument counts and bad keywords
(signals program-error (funcall (lambda (x) x)))
(signals program-error (funcall (lambda (x) x) 1 2))
(signals program-error (funcall #'err-one-arg))
(signals program-error (funcall #'err-one-arg 1 2))
(signals program-error (funcall (lambda (&key a) a) :b 1))
(signals program-error (funcall (lambda (&key a) a) :a))
(signals program-error (funcall (lambda (a &optional b) (list a b)) 1 2 3))
(signals error (destructuring-bind (a b) '(1) (list a b)))

;;; arithmetic errors
(signals division-by-zero (/ 1 0))
(signals division-by-zero (truncate 7 0))
(signals arithmetic-error (/ 5 0))

;;; control-error
(signals control-error (throw 'err-no-such-tag 1))
(signals control-error (invoke-restart 'err-no-such-restart))

;;; condition accessors
(is-eql (handler-case (car 1) (type-error (c) (type-error-datum c))) 1)
(is-eql (handler-case (error 'type-error :datum "x" :expected-type 'integer)
          (type-error (c) (type-error-expected-type c)))
        'integer)
(is-equal (handler-case (error "bad ~a" 42) (simple-error (c) (simple-condition-format-control c))) "bad ~a")
(is-equal (handler-case (error "bad ~a" 42) (simple-error (c) (simple-condition-format-arguments c))) '(42))
(is-equal (handler-case (error "bad ~a and ~s" 42 "x") (error (c) (princ-to-string c))) "bad 42 and \"x\"")
(is-equal (handler-case (error 'simple-error :format-control "~a!" :format-arguments '(hi))
            (error (c) (princ-to-string c)))
          "HI!")

;;; error and its types
(signals simple-error (error "plain"))
(signals error (error "plain"))
(signals condition (error "plain"))
(is-eql (err-type (lambda () (error "x"))) 'simple-error)
(is-eql (err-type (lambda () 1)) :none)
(is (typep (handler-case (error "x") (error (c) c)) 'error))
(is (typep (handler-case (error "x") (error (c) c)) 'condition))

;;; handler-case
(is-eql (handler-case 42) 42)
(is-eql (handler-case (error "x") (error () 'caught)) 'caught)
(is-eql (handler-case (+ 1 2) (error () 'caught)) 3)
(is-eql (handler-case (/ 1 0) (type-error () 'type) (arithmetic-error () 'arith)) 'arith)
(is-eql (handler-case (/ 1 0) (error () 'first) (division-by-zero () 'second)) 'first)
(is-equal (handler-case (values 1 2) (error () 'no)) 1)
(is-equal (multiple-value-list (handler-case (values 1 2) (error () 'no))) '(1 2))
(is-equal (handler-case (values 1 2) (:no-error (a b) (list 'ok a b))) '(ok 1 2))
(is-eql (handler-case (error "x") (error () 'err) (:no-error (v) v 'ok)) 'err)
(is-eql (handler-case (handler-case (error "inner") (type-error () 'wrong)) (simple-error () 'outer)) 'outer)
(is-equal (handler-case (handler-case (error "one") (error () (error "two"))) (error (c) (princ-to-string c))) "two")
(is-eql (block b (handler-case (return-from b 'escaped) (error () 'no))) 'escaped)
(is-eql (let ((n 0)) (dotimes (i 5) (handler-case (when (oddp i) (error "odd")) (error () (incf n)))) n) 2)

;;; ignore-errors
(is-eql (ignore-errors (+ 1 2)) 3)
(is-eql (ignore-errors (error "x")) nil)
(is-equal (length (multiple-value-list (ignore-errors (error "x")))) 2)
(is (typep (nth-value 1 (ignore-errors (error "x"))) 'simple-error))
(is (typep (nth-value 1 (ignore-errors (car 1))) 'type-error))
(is-equal (multiple-value-list (ignore-errors (values 1 2))) '(1 2))

;;; unwind-protect runs cleanup forms when an error unwinds
(is-equal (let ((log '()))
            (ignore-errors (unwind-protect (error "x") (push 'cleanup log)))
            log)
          '(cleanup))

;;; define-condition
(define-condition err-my-error (error)
  ((code :initarg :code :reader err-my-error-code :initform 0))
  (:report (lambda (c stream) (format stream "my error with code ~d" (err-my-error-code c)))))
(define-condition err-sub-error (err-my-error) ())
(define-condition err-note (condition) ((text :initarg :text :reader err-note-text)))
(define-condition err-string-report (error) () (:report "fixed report"))

(signals err-my-error (error 'err-my-error :code 7))
(signals error (error 'err-my-error))
(signals err-my-error (error 'err-sub-error))
(is-eql (handler-case (error 'err-my-error :code 7) (err-my-error (c) (err-my-error-code c))) 7)
(is-eql (handler-case (error 'err-my-error) (err-my-error (c) (err-my-error-code c))) 0)
(is-equal (handler-case (error 'err-my-error :code 3) (error (c) (princ-to-string c))) "my error with code 3")
(is-equal (handler-case (error 'err-string-report) (error (c) (princ-to-string c))) "fixed report")
(is-eql (handler-case (error 'err-sub-error :code 2) (err-sub-error () 'sub) (err-my-error () 'base)) 'sub)
(is-eql (handler-case (error 'err-my-error) (err-sub-error () 'sub) (err-my-error () 'base)) 'base)
(is-eql (err-type (lambda () (error 'err-sub-error))) 'err-sub-error)

;;; signal and handler-bind
(is-eql (signal 'err-note :text "x") nil)
(is-equal (handler-case (signal 'err-note :text "hello") (err-note (c) (err-note-text c))) "hello")
(is-equal (let ((seen '()))
            (handler-bind ((err-note (lambda (c) (push (err-note-text c) seen))))
              (signal 'err-note :text "a")
              (signal 'err-note :text "b"))
            seen)
          '("b" "a"))
(is-eql (let ((seen nil))
          (handler-bind ((err-note (lambda (c) c (setq seen t))))
            (signal 'err-note))
          seen)
        t)
(is-eql (handler-case
            (handler-bind ((error (lambda (c) c nil)))
              (error "declined"))
          (error () 'outer-caught))
        'outer-caught)
(is-equal (let ((log '()))
            (handler-case
                (handler-bind ((error (lambda (c) c (push 'inner log))))
                  (handler-bind ((error (lambda (c) c (push 'innermost log))))
                    (error "x")))
              (error () (push 'case log)))
            (reverse log))
          '(innermost inner case))
(is-eql (catch 'out
          (handler-bind ((error (lambda (c) c (throw 'out 'thrown))))
            (error "x")))
        'thrown)
(is-eql (block b
          (handler-bind ((type-error (lambda (c) (return-from b (type-error-datum c)))))
            (car 'not-a-list)))
        'not-a-list)
(signals simple-error (handler-bind ((err-note (lambda (c) c (error "from handler")))) (signal 'err-note)))

;;; restart-case and invoke-restart
(is-eql (restart-case (invoke-restart 'use-it 5) (use-it (v) (* v 2))) 10)
(is-eql (restart-case 7 (use-it (v) v)) 7)
(is-eql (restart-case (progn (invoke-restart 'skip) 'not-here) (skip () 'skipped)) 'skipped)
(is-eql (handler-bind ((error (lambda (c) c (invoke-restart 'recover 42))))
          (restart-case (error "fail")
            (recover (v) v)))
        42)
(defun err-parse-or-default (s)
  (restart-case (parse-integer s)
    (use-default () 0)))
(is-equal (handler-bind ((parse-error (lambda (c) c (invoke-restart 'use-default))))
            (mapcar #'err-parse-or-default '("1" "x" "3")))
          '(1 0 3))
(is-eql (handler-bind ((err-my-error (lambda (c) (invoke-restart 'continue-with (err-my-error-code c)))))
          (+ 1 (restart-case (error 'err-my-error :code 10)
                 (continue-with (v) v))))
        11)
(is-equal (restart-case (invoke-restart 'r 1 2 3) (r (&rest args) args)) '(1 2 3))
(is-eql (restart-case (restart-case (invoke-restart 'outer) (inner () 'i)) (outer () 'o)) 'o)

;;; errors inside other constructs
(is-eql (handler-case (mapcar (lambda (x) (/ 10 x)) '(1 0)) (division-by-zero () 'div0)) 'div0)
(is-eql (handler-case (funcall (lambda () (car 5))) (type-error () 'te)) 'te)
(is-eql (handler-case (let ((h (make-hash-table))) (gethash 1 h) (error "after")) (simple-error () 'ok)) 'ok)

;;; defining a built-in name: an error that says what the name is
(signals error (eval '(defun car (x) x)))
(signals error (eval '(defun pi () 3)))
#+jiti (is (search "built-in constant"
                   (handler-case (eval '(defun pi () 3)) (error (e) (princ-to-string e)))))
#+jiti (is (search "built-in special operator"
                   (handler-case (eval '(defun if (x) x)) (error (e) (princ-to-string e)))))
#+jiti (is (search "built-in macro"
                   (handler-case (eval '(defmacro when (x) x)) (error (e) (princ-to-string e)))))
(is-eql (car '(1 2)) 1)
;;; the leftmost :allow-other-keys decides
(signals program-error (eval '(string= "a" "b" :allow-other-keys nil :allow-other-keys t :foo 'bar)))
(is-eql (eval '(position 1 '(0 1) :allow-other-keys t :allow-other-keys nil :foo 2)) 1)
;;; a built-in function, macro or special operator cannot be bound locally
#+jiti (signals error (eval '(flet ((car (x) x)) (car 1))))
#+jiti (signals error (eval '(labels ((when (x) x)) (when 1))))
#+jiti (signals error (eval '(flet ((if (x) x)) 1)))
;;; built-in type names: atomic ones (known to typep without a layout) too
(signals error (eval '(defstruct cons a)))
(is (typep (cons 1 2) 'cons))
#+jiti (is (search "built-in name of the language"
                   (handler-case (eval '(defstruct fixnum a)) (error (e) (princ-to-string e)))))
#+jiti (is (search "built-in name of the language"
                   (handler-case (eval '(define-condition hash-table () ())) (error (e) (princ-to-string e)))))

;;; Calling NIL or T (immediates with no function cell) is an undefined
;;; function, arguments evaluated first; never a crash.
(signals undefined-function (eval '(nil)))
(signals undefined-function (eval '(t)))
(signals undefined-function (eval '(nil 1 2)))
(is-eql (handler-case (eval '(nil)) (undefined-function (c) (cell-error-name c))) nil)
(is-eql (handler-case (eval '(t 1)) (undefined-function (c) (cell-error-name c))) t)

;;; A handler clause naming an unknown type: testing it signals an error
;;; that goes to the outer handlers (it cannot re-enter its own cluster).
(is-eql (handler-case (handler-case (error 'err-no-such-condition)
                        (err-no-such-condition () :inner))
          (error () :outer))
        :outer)
(is-eql (handler-case (handler-case (signal "plain")
                        (err-no-such-condition () :inner))
          (error () :outer))
        :outer)

(done)

