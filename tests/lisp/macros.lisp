;;;; macros.lisp -- DEFMACRO, lambda lists, expansion, backquote, GENSYM.
(suite "macros")

;;; simple macros
(defmacro mac-swap (a b)
  (let ((tmp (gensym "TMP")))
    `(let ((,tmp ,a)) (setq ,a ,b) (setq ,b ,tmp))))
(is-equal (let ((x 1) (y 2)) (mac-swap x y) (list x y)) '(2 1))
(is-equal (let ((tmp 1) (y 2)) (mac-swap tmp y) (list tmp y)) '(2 1))

(defmacro mac-unless2 (test &body body) `(if ,test nil (progn ,@body)))
(is-eql (mac-unless2 nil 1 2) 2)
(is-eql (mac-unless2 t 1 2) nil)

(is-eql (defmacro mac-name () 1) 'mac-name)

;;; &optional, &rest, &key, &body, &whole, &aux
(defmacro mac-opt (a &optional (b 2 b-p) c) `(list ,a ,b ',b-p ,c))
(is-equal (mac-opt 1) '(1 2 nil nil))
(is-equal (mac-opt 1 5 6) '(1 5 t 6))
(defmacro mac-rest (first &rest others) `(list ,first ',others))
(is-equal (mac-rest 1 a b) '(1 (a b)))
(is-equal (mac-rest 1) '(1 nil))
(defmacro mac-key (&key (x 1) y) `(list ,x ,y))
(is-equal (mac-key) '(1 nil))
(is-equal (mac-key :y 3) '(1 3))
(is-equal (mac-key :y 3 :x 4) '(4 3))
(defmacro mac-body (name &body body) `(list ',name (progn ,@body)))
(is-equal (mac-body foo 1 2 3) '(foo 3))
(defmacro mac-whole (&whole w a b) `(list ',w ,a ,b))
(is-equal (mac-whole 1 2) '((mac-whole 1 2) 1 2))
(defmacro mac-aux (a &aux (b (* 2 a))) `(list ,a ,b))
(is-equal (mac-aux 4) '(4 8))

;;; destructuring lambda lists
(defmacro mac-destr ((a b) (c &optional d) &rest e) `(list ,a ,b ,c ,d ',e))
(is-equal (mac-destr (1 2) (3) x y) '(1 2 3 nil (x y)))
(is-equal (mac-destr (1 2) (3 4)) '(1 2 3 4 nil))
(defmacro mac-with-pair ((var val) &body body) `(let ((,var ,val)) ,@body))
(is-eql (mac-with-pair (z 10) (+ z 1)) 11)
(defmacro mac-dotted (a . rest) `(list ,a ',rest))
(is-equal (mac-dotted 1 2 3) '(1 (2 3)))
(defmacro mac-nested-key ((&key (lo 0) (hi 10)) x) `(and (<= ,lo ,x) (< ,x ,hi)))
(is (mac-nested-key (:hi 5) 3))
(is (not (mac-nested-key (:lo 4) 3)))

;;; macroexpand-1 and macroexpand
(defmacro mac-inc (place) `(setq ,place (+ ,place 1)))
(defmacro mac-inc2 (place) `(mac-inc ,place))
(is-equal (macroexpand-1 '(mac-inc x)) '(setq x (+ x 1)))
(is-equal (macroexpand-1 '(mac-inc2 x)) '(mac-inc x))
(is-equal (macroexpand '(mac-inc2 x)) '(setq x (+ x 1)))
(is-equal (multiple-value-list (macroexpand-1 '(mac-inc x))) '((setq x (+ x 1)) t))
(is-equal (multiple-value-list (macroexpand-1 '(car x))) '((car x) nil))
(is-equal (multiple-value-list (macroexpand '(car x))) '((car x) nil))
(is-equal (nth-value 1 (macroexpand '(mac-inc2 y))) t)
(is-equal (macroexpand-1 7) 7)
(is-eql (let ((x 5)) (mac-inc2 x) x) 6)
(is-equal (macroexpand-1 '(mac-swap-nope 1)) '(mac-swap-nope 1))

;;; macros that expand into definitions
(defmacro mac-defadder (name n) `(defun ,name (x) (+ x ,n)))
(mac-defadder mac-add5 5)
(is-eql (mac-add5 1) 6)
(defmacro mac-my-or (&rest forms)
  (if (null forms)
      nil
      (let ((g (gensym)))
        `(let ((,g ,(car forms)))
           (if ,g ,g (mac-my-or ,@(cdr forms)))))))
(is-eql (mac-my-or nil nil 3) 3)
(is-eql (mac-my-or) nil)
(is-eql (let ((n 0)) (mac-my-or (progn (incf n) nil) (progn (incf n) 7)) ) 7)
(defmacro mac-while (test &body body) `(loop (unless ,test (return)) ,@body))
(is-eql (let ((i 0)) (mac-while (< i 10) (setq i (+ i 1))) i) 10)
(defmacro mac-recursive (n) (if (= n 0) 0 `(+ 1 (mac-recursive ,(- n 1)))))
(is-eql (mac-recursive 5) 5)

;;; the macro body is evaluated at expansion time, arguments are not
(defmacro mac-quote-arg (x) `',x)
(is-equal (mac-quote-arg (+ 1 2)) '(+ 1 2))
(defmacro mac-count-args (&rest args) (length args))
(is-eql (mac-count-args a b c) 3)

;;; backquote
(is-equal `(a b c) '(a b c))
(is-equal (let ((x 1)) `(a ,x)) '(a 1))
(is-equal (let ((x '(1 2))) `(a ,@x b)) '(a 1 2 b))
(is-equal (let ((x '(1 2))) `(a ,x)) '(a (1 2)))
(is-equal (let ((x '(1 2))) `(,@x)) '(1 2))
(is-equal (let ((x '())) `(a ,@x)) '(a))
(is-equal (let ((x 1)) `(a . ,x)) '(a . 1))
(is-equal (let ((x '(2 3))) `(1 . ,x)) '(1 2 3))
(is-equal `(1 ,(+ 1 1) ,@(list 3 4) 5) '(1 2 3 4 5))
(is-equal (let ((x 'q)) `((,x) (,x ,x))) '((q) (q q)))
(is-equal (let ((a 1) (b '(2))) `(,a (,@b (,a)))) '(1 (2 (1))))
(is-equal `(quote ,(+ 1 2)) '(quote 3))
(is-equal (let ((x 5)) `',x) '(quote 5))
(is-equalp (let ((x 1)) `#(a ,x)) #(a 1))
(is-equal `,(+ 2 3) 5)
(is-equal (let ((l '(1 2))) `(,@l ,@l)) '(1 2 1 2))
(is-equal (eval (let ((x 'a)) ``(b ,',x))) '(b a))
(is-equal (eval (let ((x 2)) `(let ((y 3)) `(,y ,,x)))) '(3 2))
(is-equal (let ((l (list 1 2))) (let ((r `(0 ,@l))) (equal r '(0 1 2)))) t)

;;; gensym
(is (symbolp (gensym)))
(is (not (eq (gensym) (gensym))))
(is-eql (search "FOO" (symbol-name (gensym "FOO"))) 0)
(is (not (eq (gensym "X") 'x)))

;;; macrolet
(is-eql (macrolet ((twice (x) `(* 2 ,x))) (twice 21)) 42)
(is-equal (macrolet ((m (&rest xs) `(list ,@(reverse xs)))) (m 1 2 3)) '(3 2 1))

;;; macros see a fresh expansion each use
(defmacro mac-counter () (list 'quote (gensym)))
(is (not (eq (mac-counter) (mac-counter))))


;;; *macroexpand-hook* sees every expansion
(defmacro mac-seven () 7)
(defvar *mac-seen* '())
(is-equal (let ((*macroexpand-hook*
                  (compile nil '(lambda (f form env) (push (car form) *mac-seen*) (funcall f form env)))))
            (list (macroexpand-1 '(mac-seven)) (and (member 'mac-seven *mac-seen*) t)))
          '(7 t))
;;; compiler macros: kept, callable by hand
(defun mac-square (x) (* x x))
(define-compiler-macro mac-square (&whole whole x) (if (numberp x) (* x x) whole))
(is-eql (funcall (compiler-macro-function 'mac-square) '(mac-square 3) nil) 9)
(is-equal (funcall (compiler-macro-function 'mac-square) '(mac-square y) nil) '(mac-square y))
(is-eql (mac-square 4) 16)
(is (null (compiler-macro-function 'no-such-compiler-macro)))
(is (compiled-function-p #'car))
(is (not (compiled-function-p 'car)))
(is-eql (with-compilation-unit () 1 2) 2)

;;; eval-when: code is evaluated, so only :execute runs the body
(is-eql (eval-when (:execute) 1) 1)
(is-eql (eval-when (:load-toplevel) :bad) nil)
(is-eql (eval-when (:compile-toplevel :load-toplevel) :bad) nil)

;;; the bodies of define-compiler-macro and define-setf-expander are blocks
(define-compiler-macro mac-cm-block (&whole form x)
  "Compiler macro doc."
  (declare (ignore x))
  (return-from mac-cm-block form))
(is-equal (funcall (compiler-macro-function 'mac-cm-block) '(mac-cm-block 1) nil) '(mac-cm-block 1))
(is-equal (documentation 'mac-cm-block 'compiler-macro) "Compiler macro doc.")
(define-setf-expander mac-sx-block (x)
  (let ((store (gensym)))
    (return-from mac-sx-block (values nil nil (list store) `(list :set ,x ,store) `(list :get ,x)))))
(is-equal (setf (mac-sx-block 1) 2) '(:set 1 2))

;;; macro-function with an environment, and (setf macro-function)
(is-eql (macrolet ((mac-local () 16))
          (macrolet ((mac-get (&environment env) (list 'quote (macro-function 'mac-local env))))
            (funcall (mac-get) '(mac-local) nil)))
        16)
(setf (macro-function 'mac-my-pop) (macro-function 'pop))
(is-equal (eval '(let ((x (list 1 2))) (list (mac-my-pop x) x))) '(1 (2)))
(is-equal (defun (setf mac-setf-name) (v x) (declare (ignore x)) v) '(setf mac-setf-name))

;;; proclaim checks its declaration specifier
(is-eql (proclaim '(optimize (speed 1))) nil)
(signals error (proclaim '(optimize . foo)))
(signals error (proclaim '(type integer . foo)))
(signals error (proclaim '(ftype . foo)))
(signals error (proclaim 5))

;;; an unknown declaration identifier is warned about when the form is
;;; processed; the standard's, type names and proclaimed names are not
(defun mac-decl-warns (form)
  (block w
    (handler-bind ((warning (lambda (c) (declare (ignore c)) (return-from w :warned))))
      (funcall (compile nil `(lambda () ,form))))))
(deftype mac-decl-type () 'integer)
(defstruct mac-decl-struct a)
(is-eql (mac-decl-warns '(let ((x 1)) (declare (mac-no-such-declaration x)) x)) :warned)
(is-eql (mac-decl-warns '(funcall (lambda () (declare (mac-no-such-declaration)) 1))) :warned)
(is-eql (mac-decl-warns '(let ((x 1) (f #'car) (s (make-mac-decl-struct)) (c (make-condition 'simple-error)))
                          (declare (fixnum x) (type (integer 0 5) x) ((integer 0 4) x) (ignorable x f s c)
                                   (dynamic-extent f) (optimize (speed 1) safety) (inline mac-decl-warns)
                                   (notinline mac-decl-warns) (ftype (function (t) t) mac-decl-warns)
                                   (mac-decl-type x) (t x) (function f) (mac-decl-struct s)
                                   (structure-object s) (condition c))
                          x))
        1)
;; after a handler left the warning, the same form is analysed again cleanly
(is-eql (mac-decl-warns '(let ((x 2)) (declare (mac-no-such-declaration x)) x)) :warned)
(is-eql (handler-bind ((warning #'muffle-warning))
          (funcall (compile nil '(lambda () (let ((x 3)) (declare (mac-no-such-declaration x)) x)))))
        3)
(is-eql (proclaim '(declaration mac-proclaimed-decl)) nil)
(declaim (declaration mac-declaimed-decl))
(is-eql (mac-decl-warns '(let ((x 1)) (declare (mac-proclaimed-decl x) (mac-declaimed-decl)) x)) 1)
;; no name is both a declaration and a type (CLHS type), either way round
(signals error (eval '(deftype mac-proclaimed-decl () t)))
(signals error (eval '(defstruct mac-proclaimed-decl a)))
(signals error (eval '(defclass mac-declaimed-decl () ())))
(signals error (eval '(define-condition mac-declaimed-decl (condition) ())))
(signals error (proclaim '(declaration mac-decl-type)))
(signals error (proclaim '(declaration mac-decl-struct)))
(signals error (proclaim '(declaration mac-decl-is-not-a-symbol . 5)))

;;; a local macro's expander sees the symbol macros and macros around its
;;; macrolet (not its lexical variables), and not its own siblings
(is-equal (symbol-macrolet ((mac-table '(1 2 3)))
            (macrolet ((mac-m () `(list ,@mac-table))) (mac-m)))
          '(1 2 3))
(is-eql (macrolet ((mac-outer (x) `(* 2 ,x)))
          (macrolet ((mac-inner (y) (mac-outer y))) (mac-inner 5)))
        10)
(is-equal (symbol-macrolet ((mac-sm 1))
            (let ((mac-sm 2))
              (declare (ignorable mac-sm))
              (macrolet ((mac-m () (if (boundp 'mac-sm) :bound :unbound))) (list mac-sm (mac-m)))))
          '(2 :unbound))
(is-eql (macrolet ((mac-a () 1) (mac-b () (if (macro-function 'mac-a) :global :local))) (mac-b)) :local)
(is-eql (macrolet ((mac-a () 1))
          (macrolet ((mac-a () 2) (mac-b () (mac-a))) (mac-b)))
        1)
(done)
