/* test_reimport.c — a published world always imports back as the same world.
**
** Property: random histories of calls (ordinary definitions of every kind,
** structures and classes with stored instances, methods, packages, data
** rows; types, symbol macros, setf expanders, modify and compiler macros,
** documentation and property lists, and the functions that use them; and
** the calls that once made a store unimportable: names that are uninterned
** symbols or hold a NUL, packages deleted or renamed under their entries, a
** structure redefined under its instances or over a class, eql specializers
** that are not literals, a type whose macros read what is imported after
** it) each run as a transaction in a worker's world.  The calls come in
** families; most histories draw from two of them, so that their calls meet.  What an accepted call changed is published into a model
** store (kind and name -> bytes, as the store keeps them).  At the end of a
** history, and now and then in the middle of one (the history then goes on
** in the new world, as after a kernel restart), the store is imported into
** a fresh world the way the worker imports a revision (kinds in the store's
** order, a failed entry faults the world, then jiti_import_done and the
** baseline check).  The imported world must not be faulted, must export
** exactly what the live world exports (the entries of the store), and must
** answer a set of probes (functions, methods, variables, rows, structures,
** instances, packages, symbols, typep, setf through each expander, modify
** and compiler macros, documentation, property lists) as the live world
** does.  (What a definition's body expands to is fixed when it is analysed:
** as a transaction makes it, and at its first call once imported.  The
** calls redefine no macro such a body uses otherwise, so that both worlds
** expand alike.)
**
** On a failure the seed and a shrunk history (calls deleted while it still
** fails) are printed.
**
**   JITI_REIMPORT_ROUNDS=N  histories (default 100; 50 under ASan, 5 under GC stress)
**   JITI_REIMPORT_SEED=S    first seed (default 20261207)
**   JITI_REIMPORT_STATS=1   how often each call was accepted, and why not
**
** Before them, one test per rule: each call is refused with its reason, the
** world keeps serving, and the store imports back unfaulted; and histories
** that once came back otherwise than they were made.  (Under GC stress the
** rules and the restarts inside a history skip the probes.)
*/
#include <stdlib.h>
#include <stdint.h>
#include "txn.h"
#include "check.h"

/* ------------------------------------------------------------ the calls */

/* $I, $J: small indices (0..2); $V: a small integer. */
static const char *const calls[] = {
  /* ordinary definitions */
  "(defun f$I () $V)",
  "(defun f$I () (list $V (ignore-errors (f$J))))",
  "(defmacro m$I (x) `(list ,x $V))",
  "(defun uses-m$I () (m$I $V))",
  "(defun (setf f$I) (v) (list :set v $V))",
  "(fmakunbound 'f$I)",
  "(defvar *v$I* $V)",
  "(defparameter *v$I* (list $V 'sym \"s\" #\\c 1.5 :kw))",
  "(defparameter *v$I* (make-s$J :a $V))",
  "(defparameter *v$I* (make-instance 'c$J :a $V))",
  "(progn (defvar *v$I* nil) (setf *v$I* (list $V *v$J*)))",
  "(defconstant +k$I+ $V)",
  "(defstruct s$I a b)",
  "(defstruct s$I a b c)",
  "(defstruct s$I a)",
  "(defstruct s$I (a $V) b)",
  "(world-put :k$J (make-s$I :a $V))",
  "(defclass c$I () ((a :initarg :a :accessor c$I-a)))",
  "(defclass c$I () ((a :initarg :a :accessor c$I-a) (b :initform $V :accessor c$I-b)))",
  "(world-put :k$J (make-instance 'c$I :a $V))",
  "(defgeneric g$I (x))",
  "(defmethod g$I ((x integer)) (+ x $V))",
  "(defmethod g$I ((x (eql :k$J))) $V)",
  "(defmethod g$I ((x (eql $V))) (list :eql $V))",
  "(defmethod g$I ((x (eql 'sym))) (list :sym $V))",
  "(defmethod g$I ((x (eql \"abc\"))) (list :abc $V))",
  "(defmethod g$I ((x c$J)) (list :c (c$J-a x)))",
  "(defmethod g$I :around ((x t)) (list :around (call-next-method)))",
  "(defpackage :p$I (:use :cl))",
  "(defun p$I::f () $V)",
  "(world-put :k$J 'p$I::sym)",
  "(in-package :p$I)",
  "(cl:in-package :cl-user)",
  "(world-put :k$J $V)",
  "(world-rem :k$J)",
  "(world-put \"k$J\" (list $V \"x\" #\\y))",
  "(world-put '(:k $J) (vector $V 2.5d0))",
  "(defstruct (s$I (:include s$J)) d)",
  "(defclass c$I (c$J) ((d :initform $V :allocation :class :accessor c$I-d)))",
  "(defclass k$I () ((d :allocation :class :initform (make-instance 'c$J :a $V))))",
  "(define-condition e$I (error) ((a :initarg :a :reader e$I-a)))",
  "(defgeneric g$I (x) (:method ((x string)) (list :string $V)))",
  "(world-put :k$J (let ((h (make-hash-table :test 'equal))) (setf (gethash \"a\" h) $V (gethash 'sym h) (list $V)) h))",
  "(defpackage :p$I (:use :cl) (:export #:sym #:f))",
  "(use-package :p$I)",
  "(unuse-package :p$I)",
  "(export 'p$I::sym :p$I)",
  "(unexport 'p$I::sym :p$I)",
  "(import 'p$I::sym)",
  "(shadow \"SYM\")",
  "(defvar *v$I* (list 'sym 'p$J::sym))",
  "(defmacro defthing (n) (let ((x (gensym))) `(defun ,n (,x) (* 2 ,x))))",
  "(defthing dbl$I)",
  "",
  /* calls that once left the store unimportable */
  "!(defun #:x$I () $V)",
  "!(defmacro #:m$I () $V)",
  "!(defvar #:v$I $V)",
  "!(defparameter #:v$I $V)",
  "!(defconstant #:k$I $V)",
  "!(defstruct #:s$I a)",
  "!(define-condition #:e$I (error) ())",
  "!(defclass #:c$I () ())",
  "!(defgeneric #:g$I (x))",
  "!(defmethod #:g$I ((x t)) $V)",
  "!(defun (setf #:x$I) (v) v)",
  "(delete-package :p$I)",
  "(rename-package :p$I :q$I)",
  "(progn (in-package :p$I) (cl:delete-package :p$I))",
  "(unintern 'f$I)",
  "(defstruct c$I a)",
  "(defclass s$I () ())",
  "(define-condition c$I (error) ())",
  "!(defmethod g$I ((x (eql (make-instance 'c$J)))) $V)",
  "!(defmethod g$I ((x (eql (list $V 2)))) 1)",
  "!(defmethod g$I ((x (eql (vector $V)))) 1)",
  "!(defmethod g$I ((x (eql '#:sym$V))) 1)",
  "!(defmethod g$I ((x (eql *v$J*))) 1)",
  "(world-put (intern (format nil \"K$J~cX\" (code-char 0)) :keyword) $V)",
  "!(eval (list 'defun (intern (format nil \"F$I~cX\" (code-char 0))) () $V))",
  "!(eval (list 'defvar (intern (format nil \"*V$I~cX*\" (code-char 0))) $V))",
  "!(make-package (format nil \"P$I~cX\" (code-char 0)))",
  "!(world-put (format nil \"k$J~cz\" (code-char 0)) $V)",
  "!(world-put (vector $V) 1)",
  "!(world-put (make-s$I :a $V) 1)",
  "",
  /* types: plain, standing on other types (only lower ones: a type that
  ** names itself exhausts the stack), on a symbol macro, a macro, a gensym.
  ** (A deftype's body is analysed when it is made, an imported one when it
  ** is imported, as functions are: the symbol macro and macro it uses are
  ** never redefined otherwise, so that both worlds expand them alike.) */
  "(deftype t$I () '(integer 0 $V))",
  "(deftype t1 () '(or t0 string))",
  "(deftype t2 () '(and (or t0 t1) (not (eql $V))))",
  "(progn (define-symbol-macro lim 7) (deftype t$I () `(member ,lim $V)))",
  "(progn (defmacro upto (n) `'(integer 0 ,n)) (deftype t$I () (upto $V)))",
  "(define-symbol-macro lim 7)",
  /* a type, setf expander or compiler macro whose body uses a macro that
  ** calls a function, reads a variable or a property list as it expands
  ** (each defined the same way every time, as above) */
  "(progn (defun lim-of (n) (list 'quote (list 'integer 0 n))) (defmacro upto-f (n) (lim-of n)) (deftype t$I () (upto-f $V)))",
  "(progn (defvar *lim* 6) (defmacro upto-v () (list 'quote (list 'integer 0 *lim*))) (deftype t$I () (upto-v)))",
  "(progn (setf (get 'cfg 'lim) 5) (defmacro upto-p () (list 'quote (list 'integer 0 (get 'cfg 'lim)))) (deftype t$I () (upto-p)))",
  "(progn (defun tag-of () :h) (defmacro tag-m () (tag-of))"
  " (defsetf acc$I (c) (v) (list 'progn (list 'setf (list 'car c) (list 'list (tag-m) v $V)) v)))",
  "(progn (defun tag-of () :h) (defmacro tag-m () (tag-of)) (define-setf-expander acc$I (c) (let ((g (gensym)) (s (gensym)))"
  " (values (list g) (list c) (list s) `(progn (setf (car ,g) (list ,(tag-m) ,s $V)) ,s) `(car ,g)))))",
  "(progn (defun cm-val () 3) (defmacro cm-m () (cm-val)) (define-compiler-macro f$I (x) (list '+ x (cm-m) $V)))",
  "(defmacro deft (n) (let ((x (gensym))) `(deftype ,n () (let ((,x '(integer $V 20))) ,x))))",
  "(progn (defmacro deft (n) (let ((x (gensym))) `(deftype ,n () (let ((,x '(integer $V 20))) ,x)))) (deft t$I))",
  "(defun typ$I (x) (typep x 't$J))",
  "",
  /* a type's name taken by a structure, class or condition, and back */
  "(defstruct t$I a)",
  "(defclass t$I () ((a :initarg :a)))",
  "(define-condition t$I (error) ())",
  "(deftype t$I () 's$J)",
  "(defstruct s$I (a 0 :type t$J) b)",
  "(defclass c$I () ((a :initarg :a :type t$J :accessor c$I-a)))",
  "(deftype s$I () 'integer)",
  "(deftype c$I () 'integer)",
  "(deftype e$I () 'integer)",
  "",
  /* symbol macros, and variables of their names */
  "(define-symbol-macro sm$I (car *v$J*))",
  "(define-symbol-macro sm$I $V)",
  "(define-symbol-macro sm$I '#:g$V)",
  "(define-symbol-macro *v$I* $V)",
  "(defvar sm$I $V)",
  "(defmacro defsm (n) (let ((x (gensym))) `(define-symbol-macro ,n (let ((,x $V)) (list ,x ',x)))))",
  "(progn (defmacro defsm (n) (let ((x (gensym))) `(define-symbol-macro ,n (let ((,x $V)) (list ,x ',x))))) (defsm sm$I))",
  "(defun use-sm$I () (list sm$I))",
  "",
  /* setf expanders: short and long defsetf, define-setf-expander, on a
  ** function that also has a setf function, made by a macro with gensyms */
  "(defun acc$I (c) (car c))",
  "(defun set-acc$I (c v) (setf (car c) (list :set v $V)) v)",
  "(defsetf acc$I set-acc$J)",
  "(defsetf acc$I (c) (v) `(progn (setf (car ,c) (list :long ,v $V)) ,v))",
  "(define-setf-expander acc$I (c) (let ((g (gensym)) (s (gensym)))"
  " (values (list g) (list c) (list s) `(progn (setf (car ,g) (list :exp ,s $V)) ,s) `(car ,g))))",
  "(defmacro defacc (n) (let ((c (gensym)) (v (gensym)))"
  " `(defsetf ,n (,c) (,v) (list 'progn (list 'setf (list 'car ,c) (list 'list :gen ,v)) ,v))))",
  "(progn (defmacro defacc (n) (let ((c (gensym)) (v (gensym)))"
  " `(defsetf ,n (,c) (,v) (list 'progn (list 'setf (list 'car ,c) (list 'list :gen ,v)) ,v)))) (defacc acc$I))",
  "(defsetf f$I (c) (v) `(list :f ,c ,v))",
  "(defun put-acc$I (c) (setf (acc$J c) $V) c)",
  "",
  /* modify macros, over a macro's name and under one */
  "(define-modify-macro mod$I (&optional (d $V)) +)",
  "(define-modify-macro mod$I (&rest l) append \"Append.\")",
  "(define-modify-macro m$I (&optional (d 1)) -)",
  "(defmacro mod$I (x) `(list ,x $V))",
  "",
  /* compiler macros: defined, on a setf function, by a macro, removed,
  ** set without a form (refused), in a package */
  "(define-compiler-macro f$I (&whole w x) (if (numberp x) (+ x $V) w))",
  "(define-compiler-macro (setf f$I) (&whole w v c) (declare (ignore v c)) w)",
  "(defmacro defcm (n) (let ((w (gensym))) `(define-compiler-macro ,n (&whole ,w &rest r) (list r ,w))))",
  "(progn (defmacro defcm (n) (let ((w (gensym))) `(define-compiler-macro ,n (&whole ,w &rest r) (list r ,w)))) (defcm f$I))",
  "(setf (compiler-macro-function 'f$I) nil)",
  "(setf (compiler-macro-function '(setf f$I)) nil)",
  "!(setf (compiler-macro-function 'f$I) (lambda (f e) (declare (ignore e)) f))",
  "(define-compiler-macro p$I::f () $V)",
  "(define-compiler-macro car (x) x)",
  "!(define-compiler-macro #:f$I (x) x)",
  "!(deftype #:t$I () 'integer)",
  "!(define-symbol-macro #:sm$I $V)",
  "!(defsetf #:acc$I set-acc$J)",
  "!(define-setf-expander #:acc$I (c) (values nil nil nil c c))",
  "!(define-modify-macro #:mod$I () 1+)",
  "(defun cm-of$I () (let ((cm (compiler-macro-function 'f$J))) (and cm (funcall cm '(f$J 1) nil))))",
  "",
  /* documentation: of functions, setf functions, variables, types, names
  ** in a package, of odd doc types; removed; of built-in and uninterned names */
  "(setf (documentation 'f$I 'function) \"doc f$I $V\")",
  "(setf (documentation 'f$I 'function) nil)",
  "(setf (documentation '(setf f$I) 'function) \"setf doc $V\")",
  "(setf (documentation '*v$I* 'variable) \"var $V\")",
  "(setf (documentation 't$I 'type) \"type $V\")",
  "(setf (documentation 'p$I::f 'function) \"pdoc $V\")",
  "(setf (documentation 'f$I 'p$J::kind) \"kind $V\")",
  "(setf (documentation 'f$I :kind) \"kw $V\")",
  "(setf (documentation '#:f$I 'function) \"gone\")",
  "(setf (documentation 'f$I '#:kind) \"gone\")",
  "(setf (documentation 'car 'function) \"x\")",
  "(defvar *v$I* $V \"defvar doc $V\")",
  "(defparameter *v$I* $V \"defparameter doc $V\")",
  "(defun doc-of$I () (documentation 'f$J 'function))",
  "",
  /* property lists: of user symbols, keywords, symbols of a package;
  ** removed, replaced, shared, holding instances, symbols and gensyms;
  ** uninterned symbols' (no entry); odd or built-in ones (refused) */
  "(setf (get 'sym 'p$I) $V)",
  "(setf (get 'pl$I 'p$J) (list $V 'sym \"s\"))",
  "(remprop 'pl$I 'p$J)",
  "(setf (symbol-plist 'pl$I) (list 'a $V 'b 'p$J::sym))",
  "(setf (symbol-plist 'pl$I) nil)",
  "(setf (get 'p$I::sym 'p) $V)",
  "(setf (get :kw$I 'p) $V)",
  "(setf (get 'pl$I 'p) (make-s$J :a $V))",
  "(setf (get 'pl$I 'p) (make-instance 'c$J :a $V))",
  "(progn (defclass c$J () ((a :initarg :a :accessor c$J-a))) (setf (get 'pl$I 'p) (list (make-instance 'c$J :a $V))))",
  "(defclass c$I () ((a :initarg :a :accessor c$I-a) (b :initform $V :accessor c$I-b)))",
  "(progn (defstruct s$J a b) (setf (get 'pl$I 'p) (make-s$J :a $V)))",
  "(defstruct s$I a b c)",
  "(setf (get 'pl$I 'p) '#:g$V)",
  "(let ((g (gensym))) (setf (get 'pl$I 'p) (list g g)))",
  "!(setf (symbol-plist 'pl$I) (symbol-plist 'pl$J))",
  "!(setf (get 'pl$I 'q) (symbol-plist 'pl$J))",
  "(push $V (get 'pl$I 'p$J))",
  "(incf (get 'pl$I 'n 0) $V)",
  "(let ((s (make-symbol \"U$I\"))) (setf (get s 'p) $V) (defparameter *v$J* (list s)))",
  "(let ((s (make-symbol \"U$I\"))) (setf (get s 'p) $V) (import s) (setf (get s 'q) 1))",
  "(setf (get (make-symbol \"U$I\") 'p) $V)",
  "(let ((s (make-symbol \"U$I\"))) (setf (get s 'p) $V) (import s))",
  "(let ((s (make-symbol \"SYM\"))) (setf (get s 'p) $V) (import s :p$I))",
  "!(setf (symbol-plist 'pl$I) (list 'a))",
  "!(let ((l (list 'a $V))) (setf (cdr (last l)) l) (setf (symbol-plist 'pl$I) l) nil)",
  "(setf (get 'car 'p) $V)",
  "(defun get-pl$I () (list (get 'pl$I 'p$J) (symbol-plist 'pl$J)))",
  "",
  /* the same in a package */
  "(deftype p$I::ty () '(integer 0 $V))",
  "(define-symbol-macro p$I::sm $V)",
  "",
  /* documentation and properties given a string or list a variable holds,
  ** which then changes in place.  (Not a definition's form: changing an
  ** object a form holds changes a literal, whose consequences are
  ** undefined, and the world keeps the form as it was defined.) */
  "(defvar *e$I* (list 'list $V))",
  "(defvar *e$I* (copy-seq \"doc$V\"))",
  "(progn (defvar *e$J* (list 'list $V)) (eval (list 'define-symbol-macro 'sm$I (copy-tree *e$J*))))",
  "(progn (defvar *e$J* (copy-seq \"doc$V\")) (setf (documentation 'f$I 'function) *e$J*))",
  "(progn (defvar *e$J* (list 'list $V)) (setf (get 'pl$I 'p) *e$J*))",
  "(progn (defvar *e$J* (list 'list $V)) (setf (symbol-plist 'pl$I) (list 'p *e$J* 'q *e$J*)))",
  "(setf (second *e$I*) $V)",
  "(setf (char *e$I* 0) #\\z)",
  "(let ((s (copy-seq \"doc$V\"))) (setf (documentation 'f$I 'function) s) (setf (char s 0) #\\z))",
  "(setf (char (documentation 'f$I 'function) 0) #\\z)",
  "(defsetf p$I::acc set-acc$J)",
  "(setf (documentation 'p$I::ty 'type) \"pty $V\")",
  "(progn (defpackage :p$I (:use :cl)) (in-package :p$I) (deftype ty () '(integer 0 $V)) (setf (get 'sym 'p) $V))",
  NULL};

#define NCALLS ((int)(sizeof calls / sizeof calls[0]) - 1)

/* The probes, evaluated in COMMON-LISP-USER in both worlds (inside a
** checkpoint that is restored): what a program would see. */
static const char probe_src[] =
  "(labels ((try (thunk) (handler-case (funcall thunk) (error () :error)))"
  "         (show (v) (cond ((consp v) (mapcar #'show v))"
  "                         ((hash-table-p v) (let ((r nil)) (maphash (lambda (k x) (push (list (show k) (show x)) r)) v)"
  "                                             (list :hash (hash-table-test v) (reverse r))))"
  "                         ((typep v '(or number character symbol string vector structure-object)) v)"
  "                         (t (list :instance (type-of v) (try (lambda () (slot-value v 'a)))"
  "                                  (try (lambda () (slot-value v 'b)))))))"
  "         (fn (name &rest args) (if (fboundp name) (try (lambda () (show (apply name args)))) :undefined))"
  "         (var (name) (if (boundp name) (show (symbol-value name)) :unbound)))"
  "  (list (mapcar #'fn '(f0 f1 f2))"
  "        (mapcar (lambda (f) (fn f 3)) '(dbl0 dbl1 dbl2))"
  "        (mapcar (lambda (i) (if (fboundp (list 'setf i)) (try (lambda () (funcall (fdefinition (list 'setf i)) 7))) :undefined))"
  "                '(f0 f1 f2))"
  "        (mapcar (lambda (g) (mapcar (lambda (a) (fn g a)) (list 1 3 :k0 :k1 'sym \"abc\" (world-get :k0) (world-get :k1))))"
  "                '(g0 g1 g2))"
  "        (mapcar #'var '(*v0* *v1* *v2* +k0+ +k1+ +k2+))"
  "        (mapcar (lambda (v) (if (boundp v) (mapcar (lambda (x) (if (symbolp x) (list x (symbol-package x)) (show x)))"
  "                                                      (if (listp (symbol-value v)) (symbol-value v) nil))"
  "                                :unbound)) '(*v0* *v1* *v2*))"
  "        (multiple-value-list (find-symbol \"SYM\" \"COMMON-LISP-USER\"))"
  "        (mapcar (lambda (k) (list k (show (world-get k)))) (world-keys))"
  "        (mapcar (lambda (s) (if (fboundp s) (try (lambda () (show (funcall s :a 1)))) :undefined))"
  "                '(make-s0 make-s1 make-s2))"
  "        (mapcar (lambda (c) (if (find-class c nil) (try (lambda () (show (make-instance c :a 2)))) :no-class))"
  "                '(c0 c1 c2))"
  "        (mapcar (lambda (c) (if (find-class c nil) (try (lambda () (show (slot-value (make-instance c) 'd)))) :no-class))"
  "                '(k0 k1 k2))"
  "        (sort (mapcar #'package-name (list-all-packages)) #'string<)"
  "        (mapcar (lambda (p) (let ((s (and (find-package p) (find-symbol \"F\" p))))"
  "                              (if (and s (fboundp s)) (try (lambda () (funcall s))) :none)))"
  "                '(\"P0\" \"P1\" \"P2\" \"Q0\" \"Q1\" \"Q2\"))"
  /* types, through typep and through the functions that use them */
  "        (mapcar (lambda (ty) (mapcar (lambda (x) (try (lambda () (typep x ty)))) (list 0 3 8 \"s\" nil :k0 (list 1 2))))"
  "                '(t0 t1 t2))"
  "        (mapcar (lambda (f) (fn f 3)) '(typ0 typ1 typ2))"
  /* symbol macros: expansions and values, evaluated afresh */
  "        (mapcar (lambda (s) (list (try (lambda () (multiple-value-list (macroexpand-1 s))))"
  "                                  (try (lambda () (show (eval s))))))"
  "                '(sm0 sm1 sm2 *v0* *v1* *v2*))"
  /* setf expanders and modify macros, through forms analysed afresh */
  "        (mapcar (lambda (a) (try (lambda () (show (eval `(let ((c (list 1 2))) (list (setf (,a c) 5) c)))))))"
  "                '(acc0 acc1 acc2 f0 f1 f2))"
  "        (mapcar (lambda (m) (list (try (lambda () (show (eval `(let ((x 1)) (,m x) x)))))"
  "                                  (try (lambda () (show (eval `(let ((x (list 1))) (,m x (list 2)) x)))))))"
  "                '(mod0 mod1 mod2 m0 m1 m2))"
  /* compiler macros, called by hand as a program may */
  "        (mapcar (lambda (f) (let ((cm (compiler-macro-function f)))"
  "                              (if cm (try (lambda () (show (funcall cm (list f 1) nil)))) :none)))"
  "                '(f0 f1 f2 (setf f0) (setf f1) (setf f2)))"
  "        (mapcar (lambda (f) (fn f)) '(cm-of0 cm-of1 cm-of2 doc-of0 doc-of1 doc-of2 get-pl0 get-pl1 get-pl2))"
  /* documentation, of each kind asked */
  "        (mapcar (lambda (n) (list (documentation n 'function) (documentation n 'variable) (documentation n 'type)"
  "                                  (documentation n :kind)))"
  "                '(f0 f1 f2 *v0* *v1* *v2* t0 t1 t2 (setf f0) (setf f1) (setf f2)))"
  /* property lists, of CL-USER's symbols and keywords */
  "        (mapcar (lambda (s) (show (symbol-plist s))) '(sym pl0 pl1 pl2 :kw0 :kw1 :kw2 u0 u1 u2))"
  /* and what the packages P0..P2 and Q0..Q2 hold of them */
  "        (mapcar (lambda (p) (if (find-package p)"
  "                                (flet ((s (n) (find-symbol n p)))"
  "                                  (list (and (s \"SYM\") (show (symbol-plist (s \"SYM\"))))"
  "                                        (and (s \"TY\") (mapcar (lambda (x) (try (lambda () (typep x (s \"TY\"))))) '(0 3 8)))"
  "                                        (and (s \"TY\") (documentation (s \"TY\") 'type))"
  "                                        (and (s \"SM\") (try (lambda () (multiple-value-list (macroexpand-1 (s \"SM\"))))))"
  "                                        (and (s \"ACC\") (try (lambda () (show (eval `(let ((c (list 1))) (setf (,(s \"ACC\") c) 5) c))))))"
  "                                        (and (s \"F\") (documentation (s \"F\") 'function))"
  "                                        (and (s \"F\") (compiler-macro-function (s \"F\")) t)"
  "                                        (and (s \"KIND\") (mapcar (lambda (f) (documentation f (s \"KIND\"))) '(f0 f1 f2)))))"
  "                                :none))"
  "                '(\"P0\" \"P1\" \"P2\" \"Q0\" \"Q1\" \"Q2\"))))";

static uint64_t rng_state;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}

typedef struct Op { int call, i, j, v, restart; } Op;
#define MAXOPS 48

/* A call marked '!' may be refused as unsafe (what it leaves would not
** import back); any other call refused so is a failure of its own: a
** legitimate call the kernel cannot publish. */
static int may_be_unsafe(int call) { return calls[call][0] == '!'; }

static void expand(const Op *o, char *out, size_t n) {
  const char *t = calls[o->call];
  if (*t == '!') t++;
  size_t k = 0;
  for (; *t && k + 8 < n; t++) {
    if (t[0] == '$' && (t[1] == 'I' || t[1] == 'J' || t[1] == 'V')) {
      k += (size_t)snprintf(out + k, n - k, "%d", t[1] == 'I' ? o->i : t[1] == 'J' ? o->j : o->v);
      t++;
    } else {
      out[k++] = *t;
    }
  }
  out[k] = 0;
}

/* ------------------------------------------------------- the model store */

typedef struct Entry { int kind; char *name; unsigned char *bytes; size_t len; } Entry;
typedef struct Store { Entry *e; int n, cap; } Store;

static void store_free(Store *s) {
  for (int i = 0; i < s->n; i++) { free(s->e[i].name); free(s->e[i].bytes); }
  free(s->e);
  memset(s, 0, sizeof *s);
}

static void store_set(Store *s, int kind, const char *name, const unsigned char *bytes, size_t len) {
  int at = -1;
  for (int i = 0; i < s->n && at < 0; i++)
    if (s->e[i].kind == kind && !strcmp(s->e[i].name, name)) at = i;
  if (!bytes) {
    if (at >= 0) {
      free(s->e[at].name);
      free(s->e[at].bytes);
      s->e[at] = s->e[--s->n];
    }
    return;
  }
  if (at < 0) {
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 32;
      s->e = realloc(s->e, (size_t)s->cap * sizeof *s->e);
    }
    at = s->n++;
    s->e[at].kind = kind;
    s->e[at].name = strdup(name);
  } else {
    free(s->e[at].bytes);
  }
  s->e[at].bytes = malloc(len ? len : 1);
  memcpy(s->e[at].bytes, bytes, len);
  s->e[at].len = len;
}

/* The store's order: kinds as the kernel imports them (the import order
** of controller/engine/storeio.c), names in byte order. */
static const jiti_EntryKind import_order[] = {
  JITI_ENTRY_PACKAGE, JITI_ENTRY_STRUCTURE, JITI_ENTRY_CLASS, JITI_ENTRY_FOREIGN, JITI_ENTRY_MACRO,
  JITI_ENTRY_SYMBOL_MACRO, JITI_ENTRY_TYPE, JITI_ENTRY_SETF_EXPANDER, JITI_ENTRY_COMPILER_MACRO,
  JITI_ENTRY_FUNCTION, JITI_ENTRY_VARIABLE, JITI_ENTRY_PLIST, JITI_ENTRY_DOCUMENTATION,
  JITI_ENTRY_METHOD_COMBINATION, JITI_ENTRY_GENERIC, JITI_ENTRY_METHOD, JITI_ENTRY_DATA, JITI_ENTRY_FILE,
  JITI_ENTRY_INVARIANT};
_Static_assert(sizeof import_order / sizeof *import_order == JITI_ENTRY_KIND_COUNT,
               "every entry kind has its place in the import order");

static int kind_rank(int kind) {
  for (int r = 0; r < JITI_ENTRY_KIND_COUNT; r++)
    if ((int)import_order[r] == kind) return r;
  return JITI_ENTRY_KIND_COUNT;
}

static int entry_cmp(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  if (x->kind != y->kind) return kind_rank(x->kind) - kind_rank(y->kind);
  return strcmp(x->name, y->name);
}

static int collect(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  store_set(ud, (int)k, name, b, len);
  return 0;
}

/* Do two stores hold the same entries — and, with `bytes`, the same
** encodings?  (A stored symbol is named as COMMON-LISP-USER sees it when it
** is written; an import or an export since may name it another way that
** reads as the same symbol, so an entry not written again can keep other
** bytes than a fresh export.)  why names the first difference. */
static int same_store(Store *a, Store *b, int bytes, const char *what, char *why, size_t n) {
  if (a->n > 1) qsort(a->e, (size_t)a->n, sizeof *a->e, entry_cmp);
  if (b->n > 1) qsort(b->e, (size_t)b->n, sizeof *b->e, entry_cmp);
  for (int i = 0; i < a->n || i < b->n; i++) {
    Entry *x = i < a->n ? &a->e[i] : NULL, *y = i < b->n ? &b->e[i] : NULL;
    if (x && y && x->kind == y->kind && !strcmp(x->name, y->name) &&
        (!bytes || (x->len == y->len && !memcmp(x->bytes, y->bytes, x->len))))
      continue;
    snprintf(why, n, "%s: one has %s %s, the other %s %s%s", what, x ? jiti_entry_kind_name(x->kind) : "nothing",
             x ? x->name : "", y ? jiti_entry_kind_name(y->kind) : "nothing", y ? y->name : "",
             x && y && x->kind == y->kind && !strcmp(x->name, y->name) ? " (other bytes)" : "");
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------ a restart */

/* The store imported into a fresh world as the worker imports a revision;
** NULL with why when it is faulted. */
static txn_World *restart(Store *s, char *why, size_t n) {
  txn_World *W = txn_open(NULL);
  jiti_State *S = txn_state(W);
  if (s->n > 1) qsort(s->e, (size_t)s->n, sizeof *s->e, entry_cmp);
  char fault[1024] = "";
  for (int i = 0; i < s->n; i++) {
    char err[512];
    if (jiti_import_entry(S, (jiti_EntryKind)s->e[i].kind, s->e[i].name, s->e[i].bytes, s->e[i].len, err,
                          sizeof err) != JITI_OK) {
      snprintf(fault, sizeof fault, "cannot import %s %s: %s", jiti_entry_kind_name(s->e[i].kind),
               s->e[i].name, err);
      txn_set_import_fault(W, fault);
    } else {
      txn_note_entry(W, (jiti_EntryKind)s->e[i].kind, s->e[i].name, s->e[i].bytes, s->e[i].len);
    }
  }
  char err[512];
  if (jiti_import_done(S, err, sizeof err) != JITI_OK) {
    snprintf(fault, sizeof fault, "cannot import: %s", err);
    txn_set_import_fault(W, fault);
  }
  char msg[1024] = "";
  if (txn_check_baseline(W, msg, sizeof msg) || txn_status(W) == TXN_ST_FAULTED) {
    snprintf(why, n, "the restarted world is faulted: %s", fault[0] ? fault : msg);
    txn_close(W);
    return NULL;
  }
  return W;
}

static char *probe(txn_World *W) {
  jiti_State *S = txn_state(W);
  char err[256];
  jiti_checkpoint(S);
  jiti_package_bind(S, "COMMON-LISP-USER", err, sizeof err);
  jiti_Result r;
  jiti_Status st = jiti_eval_string(S, probe_src, strlen(probe_src), &r);
  jiti_package_unbind(S);
  jiti_restore(S);
  size_t len = (r.value ? strlen(r.value) : 0) + (r.message ? strlen(r.message) : 0) + 64;
  char *out = malloc(len);
  snprintf(out, len, "%s%s", st == JITI_OK ? "" : "probe failed: ", st == JITI_OK ? r.value : r.message);
  jiti_result_free(&r);
  return out;
}

/* The live world, the store, and the store imported afresh agree (with
** `probes`, in their answers too); the imported world replaces the live one
** (*W) when `replace`. */
static int agree(txn_World **W, Store *store, int replace, int probes, char *why, size_t n) {
  Store live = {0}, back = {0};
  char err[512];
  int ok = 1;
  if (jiti_export_all(txn_state(*W), collect, &live, err, sizeof err) != JITI_OK) {
    snprintf(why, n, "the live world does not export: %s", err);
    ok = 0;
  }
  if (ok) ok = same_store(store, &live, 0, "the store and the live world", why, n);
  txn_World *T = ok ? restart(store, why, n) : NULL;
  if (!T) ok = 0;
  if (ok && jiti_export_all(txn_state(T), collect, &back, err, sizeof err) != JITI_OK) {
    snprintf(why, n, "the imported world does not export: %s", err);
    ok = 0;
  }
  if (ok) ok = same_store(&live, &back, 1, "the live world and the imported one", why, n);
  if (ok) {
    char *a = jiti_world_package(txn_state(*W)), *b = jiti_world_package(txn_state(T));
    if (strcmp(a, b)) {
      snprintf(why, n, "the current package is %s, imported %s", a, b);
      ok = 0;
    }
    free(a);
    free(b);
  }
  if (ok && probes) {
    char *a = probe(*W), *b = probe(T);
    if (strcmp(a, b)) {
      snprintf(why, n, "the imported world answers differently:\n    live:     %.1500s\n    imported: %.1500s", a, b);
      ok = 0;
    }
    free(a);
    free(b);
  }
  store_free(&live);
  store_free(&back);
  if (ok && replace) {
    txn_close(*W);
    *W = T;
  } else if (T) {
    txn_close(T);
  }
  return ok;
}

/* -------------------------------------------------------------- histories */

/* With JITI_REIMPORT_STATS set, how each kind of call fared (to see which
** are never accepted, and why): accepted, refused as unsafe (with the first
** such message), refused otherwise. */
typedef struct CallStats { long accepted, unsafe, other; char *first_unsafe, *first_other; } CallStats;
static CallStats *stats;

static void note_outcome(int call, txn_Reason r, const char *msg) {
  if (!stats) return;
  CallStats *c = &stats[call];
  if (r == TXN_ACCEPTED) c->accepted++;
  else if (r == TXN_UNSAFE) { c->unsafe++; if (!c->first_unsafe) c->first_unsafe = strdup(msg ? msg : ""); }
  else { c->other++; if (!c->first_other) c->first_other = strdup(msg ? msg : ""); }
}

static void print_stats(void) {
  if (!stats) return;
  for (int k = 0; k < NCALLS; k++) {
    CallStats *c = &stats[k];
    if (!calls[k][0]) continue;
    fprintf(stderr, "%5ld ok %5ld unsafe %5ld refused  %s\n", c->accepted, c->unsafe, c->other, calls[k]);
    if (c->first_unsafe) fprintf(stderr, "      unsafe: %.300s\n", c->first_unsafe);
    if (c->first_other) fprintf(stderr, "      refused: %.300s\n", c->first_other);
    free(c->first_unsafe);
    free(c->first_other);
  }
  free(stats);
  stats = NULL;
}

/* Under GC stress, where every allocation collects and the probes cost
** most, the rules' stores and the restarts inside a history are imported
** and compared without them (the end of each history keeps them). */
static int stress_unprobed;

/* Run a history: -1 when it holds, else the index of the failing call (n:
** the final restart). */
static int run_history(const Op *ops, int n, char *why, size_t wn) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  int fail = -1;
  for (int i = 0; i < n && fail < 0; i++) {
    char src[512];
    expand(&ops[i], src, sizeof src);
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), src, TXN_ACTION, NULL, NULL, &o);
    note_outcome(ops[i].call, r, o.message);
    if (r == TXN_ACCEPTED) {
      for (int c = 0; c < o.nchanges; c++)
        store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
      txn_commit(W);
    }
    if (r == TXN_UNSAFE && !may_be_unsafe(ops[i].call)) {
      snprintf(why, wn, "%s was refused: %.2000s", src, o.message ? o.message : "");
      fail = i;
    }
    txn_outcome_free(&o);
    if (fail >= 0) {
    } else if (txn_status(W) != TXN_ST_IDLE) {
      snprintf(why, wn, "after %s the world is %s", src, txn_status_name(txn_status(W)));
      fail = i;
    } else if (ops[i].restart && !agree(&W, &store, 1, !stress_unprobed, why, wn)) {
      fail = i;
    }
  }
  if (fail < 0 && !agree(&W, &store, 0, 1, why, wn)) fail = n;
  txn_close(W);
  store_free(&store);
  return fail;
}

static int call_index(const char *t) {
  for (int k = 0; k < NCALLS; k++)
    if (!strcmp(calls[k], t)) return k;
  return 0;
}

/* The calls are in families (between "" entries): a history that draws
** most of its calls from two families tries more of the ways their calls
** meet than one drawn from all. */
static int family_of(int call) {
  int f = 0;
  for (int k = 0; k < call; k++) f += !calls[k][0];
  return f;
}

static int draw_call(int fam_a, int fam_b) {
  for (;;) {
    int c = (int)(rnd() % NCALLS);
    if (!calls[c][0]) continue;
    if (fam_a < 0 || rnd() % 5 == 0 || family_of(c) == fam_a || family_of(c) == fam_b) return c;
  }
}

static void gen_ops(unsigned seed, Op *ops, int *n) {
  rng_state = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0x100000001B3ull);
  if (!rng_state) rng_state = 1;
  *n = 8 + (int)(rnd() % 33);
  /* half the histories start by making a package, so that the calls
  ** naming its symbols read */
  int pkg = rnd() % 2 ? call_index("(defpackage :p$I (:use :cl) (:export #:sym #:f))") : -1;
  int nfam = family_of(NCALLS) + 1;
  int fam_a = rnd() % 3 ? (int)(rnd() % (unsigned)nfam) : -1, fam_b = (int)(rnd() % (unsigned)nfam);
  for (int k = 0; k < *n; k++) {
    Op *o = &ops[k];
    o->call = k == 0 && pkg >= 0 ? pkg : draw_call(fam_a, fam_b);
    o->i = (int)(rnd() % 3);
    o->j = (int)(rnd() % 3);
    o->v = (int)(rnd() % 12) - 2;
    o->restart = rnd() % 10 == 0;
  }
}

static void report_failure(unsigned seed, const Op *ops, int n) {
  Op cur[MAXOPS];
  int cn = n;
  memcpy(cur, ops, sizeof(Op) * (size_t)n);
  char why[4096];
  for (int changed = 1; changed;) {   /* shrink: delete calls while it still fails */
    changed = 0;
    for (int i = 0; i < cn && !changed; i++) {
      Op trial[MAXOPS];
      int tn = 0;
      for (int k = 0; k < cn; k++) if (k != i) trial[tn++] = cur[k];
      if (run_history(trial, tn, why, sizeof why) >= 0) {
        memcpy(cur, trial, sizeof(Op) * (size_t)tn);
        cn = tn;
        changed = 1;
      }
    }
  }
  int at = run_history(cur, cn, why, sizeof why);
  fprintf(stderr, "FAIL history seed %u (%d calls), shrunk to %d, failing at %d: %s\n", seed, n, cn, at, why);
  for (int i = 0; i < cn; i++) {
    char src[512];
    expand(&cur[i], src, sizeof src);
    fprintf(stderr, "  %d: %s%s\n", i, src, cur[i].restart ? "   ; then a restart" : "");
  }
}

/* ------------------------------------------------------- each rule alone */

/* `setup` accepted call by call, then `call` refused with a reason holding
** `reason`; the world idle; the store imports back unfaulted and equal. */
static void refused(const char *setup[], const char *call, txn_Reason want, const char *reason) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  for (int i = 0; setup && setup[i]; i++) {
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), setup[i], TXN_ACTION, NULL, NULL, &o);
    if (r != TXN_ACCEPTED) fprintf(stderr, "setup %s: %s %s\n", setup[i], txn_reason_name(r), o.message);
    CHECK(r == TXN_ACCEPTED);
    for (int c = 0; c < o.nchanges; c++)
      store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
    txn_outcome_free(&o);
    txn_commit(W);
  }
  txn_Outcome o;
  txn_Reason r = txn_attempt(W, txn_generation(W), call, TXN_APPLICATION, NULL, NULL, &o);
  int ok = r == want && o.message && strstr(o.message, reason) && o.nchanges == 0;
  if (!ok) fprintf(stderr, "%s: %s \"%s\", expected %s \"...%s...\"\n", call, txn_reason_name(r),
                   o.message ? o.message : "", txn_reason_name(want), reason);
  CHECK(ok);
  txn_outcome_free(&o);
  CHECK(txn_status(W) == TXN_ST_IDLE);
  /* the kernel keeps serving */
  r = txn_attempt(W, txn_generation(W), "(jiti:world-put :after 1)", TXN_ACTION, NULL, NULL, &o);
  if (r != TXN_ACCEPTED) fprintf(stderr, "after %s: %s %s\n", call, txn_reason_name(r), o.message);
  CHECK(r == TXN_ACCEPTED);
  for (int c = 0; c < o.nchanges; c++)
    store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
  txn_outcome_free(&o);
  txn_commit(W);
  char why[4096];
  int agreed = agree(&W, &store, 0, !stress_unprobed, why, sizeof why);
  if (!agreed) fprintf(stderr, "%s: %s\n", call, why);
  CHECK(agreed);
  txn_close(W);
  store_free(&store);
}

#define UNSAFE TXN_UNSAFE
#define ERROR TXN_ERROR

static void test_each_rule(void) {
  const char *pkg[] = {"(defpackage :p1 (:use :cl))", "(defun p1::f () 1)", NULL};
  const char *pkg_current[] = {"(defpackage :p1 (:use :cl))", "(in-package :p1)", NULL};
  const char *pkg_row[] = {"(defpackage :p1 (:use :cl))", "(world-put :k 'p1::x)", NULL};
  const char *fn[] = {"(defun f0 () 1)", "(defun g0 () (h0))", NULL};
  const char *st[] = {"(defstruct s1 a b)", "(world-put :k (make-s1 :a 1 :b 2))", NULL};
  const char *st_var[] = {"(defstruct s1 a b)", "(defvar *s* (list (make-s1 :a 1 :b 2)))", NULL};
  const char *st_inc[] = {"(defstruct s1 a)", "(defstruct (s2 (:include s1)) b)", NULL};
  const char *cls[] = {"(defclass c1 () ((a :initarg :a)))", "(defgeneric g (x))", NULL};
  const char *sup[] = {"(defclass c2 (c1) ())", NULL};
  const char *sto[] = {"(defstruct s1 a)", NULL};
  const char *row[] = {"(world-put :foo 1)", "(world-put \"k\" 2)", NULL};
  /* names the store cannot give back */
  refused(NULL, "(defun #:x () 1)", UNSAFE, "unexportable: function #:X would not import back as itself: it is named by an uninterned symbol");
  refused(NULL, "(defmacro #:m () 1)", UNSAFE, "macro #:M would not import back");
  refused(NULL, "(defvar #:v 1)", UNSAFE, "variable #:V would not import back");
  refused(NULL, "(defparameter #:v 1)", UNSAFE, "variable #:V would not import back");
  refused(NULL, "(defconstant #:k 1)", UNSAFE, "variable #:K would not import back");
  refused(NULL, "(defstruct #:s a)", UNSAFE, "structure #:S would not import back");
  refused(NULL, "(define-condition #:e (error) ())", UNSAFE, "structure #:E would not import back");
  refused(NULL, "(defclass #:c () ())", UNSAFE, "class #:C would not import back");
  refused(NULL, "(defgeneric #:g (x))", UNSAFE, "generic #:G would not import back");
  refused(NULL, "(defmethod #:g ((x t)) 1)", UNSAFE, "method (#:G (T)) would not import back");
  refused(NULL, "(defun (setf #:x) (v) v)", UNSAFE, "function (SETF #:X) would not import back");
  refused(row, "(world-put (intern (format nil \"FOO~cBAR\" (code-char 0)) :keyword) 2)", ERROR,
          "is not storable in the world: a symbol whose name holds a NUL character");
  refused(row, "(eval (list 'defun (intern (format nil \"F~cX\" (code-char 0))) () 1))", UNSAFE,
          "a symbol whose name holds a NUL character");
  refused(row, "(eval (list 'defvar (intern (format nil \"*V~cX*\" (code-char 0))) 1))", UNSAFE,
          "would not import back as itself: its name does not read back");
  refused(row, "(make-package (format nil \"P~cX\" (code-char 0)))", UNSAFE, "would not import back as itself");
  refused(row, "(world-put (format nil \"k~cz\" (code-char 0)) 3)", UNSAFE, "would not import back as itself");
  refused(row, "(world-put (vector 1) 2)", UNSAFE, "its key would not find the row again");
  /* packages and symbols the stored entries rely on */
  refused(pkg, "(delete-package :p1)", ERROR, "cannot delete the package P1: the world's entries name its symbols (function P1::F)");
  refused(pkg, "(rename-package :p1 :p2)", ERROR, "cannot rename the package P1");
  refused(pkg_current, "(cl:delete-package :p1)", ERROR, "it is the world's current package");
  refused(pkg_row, "(delete-package :p1)", ERROR, "(data :K)");
  const char *pkg_struct[] = {"(defpackage :p1 (:use :cl))", "(in-package :p1)", "(defstruct cl-user::thing cl-user::a)",
                              "(cl:in-package :cl-user)", NULL};
  refused(pkg_struct, "(delete-package :p1)", ERROR, "the structure THING was defined in it");
  refused(fn, "(unintern 'f0)", ERROR, "cannot unintern F0 from COMMON-LISP-USER: the world's entries name it (function F0)");
  refused(fn, "(unintern 'h0)", ERROR, "(function G0)");
  const char *seen[] = {"(defpackage :p1 (:use :cl) (:export #:x))", "(use-package :p1)", "(defvar *v* 'x)", NULL};
  const char *unseen[] = {"(defpackage :p1 (:use :cl))", "(defun p1::f () 1)", NULL};
  refused(seen, "(unuse-package :p1)", ERROR,
          "cannot unuse it: COMMON-LISP-USER would no longer see a symbol the world's entries name (variable *V*)");
  refused(seen, "(unexport 'p1:x :p1)", ERROR, "cannot unexport it");
  refused(seen, "(shadow \"X\")", ERROR, "cannot shadow it");
  refused(unseen, "(import 'p1::f)", ERROR,
          "cannot import it: COMMON-LISP-USER would come to see a symbol the world's entries are named by (function P1::F)");
  refused(unseen, "(progn (export 'p1::f :p1) (use-package :p1))", ERROR, "cannot use it");
  /* stored instances fit their structure or class; a type's name is one type's */
  const char *inst[] = {"(defclass c1 () ((a :initarg :a)))", "(world-put :k (make-instance 'c1 :a 1))", NULL};
  refused(inst, "(defclass c1 (c9) ((a :initarg :a)))", ERROR,
          "cannot redefine the class C1 on a superclass that is not defined: the world stores instances of it (data :K)");
  refused(st, "(defstruct s1 a)", ERROR, "cannot redefine the structure S1 with other slots: the world stores instances of it (data :K)");
  refused(st_var, "(defstruct s1 a b c)", ERROR, "(variable *S*)");
  refused(st_inc, "(defstruct s1 a c)", ERROR, "the structure S2 includes it");
  refused(cls, "(defstruct c1 a)", ERROR, "cannot define C1 as a structure type: it names a class");
  refused(cls, "(define-condition c1 (error) ())", ERROR, "cannot define C1 as a condition type");
  refused(sup, "(defstruct c1 a)", ERROR, "named as a superclass");
  refused(sto, "(defclass s1 () ())", ERROR, "it names a structure");
  /* a stored eql specializer is a literal value: one made by evaluating a
  ** form works in its transaction, which is refused at the commit */
  const char *eql_form = "a method whose (EQL x) specializer is the value of a form (an import evaluates nothing";
  refused(cls, "(defmethod g ((x (eql (make-instance 'c1)))) 1)", UNSAFE, eql_form);
  refused(cls, "(defmethod g ((x (eql (list 1 2)))) 1)", UNSAFE, eql_form);
  refused(cls, "(defmethod g ((x (eql (vector 1)))) 1)", UNSAFE, eql_form);
  refused(cls, "(defmethod g ((x (eql '#:foo))) 1)", UNSAFE, eql_form);
  refused(cls, "(defmethod g ((x (eql *print-base*))) 1)", UNSAFE, "method (G ((EQL 10))) holds an unexportable value");
  refused(cls, "(defgeneric h (x) (:method ((x (eql (+ 1 2)))) 1))", ERROR, "needs x to be a literal");
}

/* What still works, and comes back: a compatible structure redefinition
** keeps its stored instances of the type; a gensym bound and used in one
** stored form stays one symbol; literal eql specializers of every kind;
** a package nobody relies on can go. */
static void test_allowed(void) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  const char *calls_ok[] = {
    "(defstruct s1 a b)", "(defvar *s* (make-s1 :a 1))", "(world-put :s (make-s1 :a 2))",
    "(defstruct s1 (a 10) b)",
    "(defmacro defthing (n) (let ((x (gensym))) `(defun ,n (,x) (* 2 ,x))))", "(defthing dbl)",
    "(defgeneric g (x))", "(defmethod g ((x (eql 3))) :three)", "(defmethod g ((x (eql 2.5d0))) :float)",
    "(defmethod g ((x (eql #\\a))) :char)", "(defmethod g ((x (eql :kw))) :kw)",
    "(defmethod g ((x (eql 'sym))) :sym)", "(defmethod g ((x (eql \"abc\"))) :abc1)",
    "(defmethod g ((x (eql \"abc\"))) :abc2)", "(defmethod g ((x (eql nil))) :nil)",
    "(defpackage :gone (:use :cl))", "(defun gone::f () 1)", "(fmakunbound 'gone::f)", "(delete-package :gone)",
    "(defpackage :old (:use :cl))", "(rename-package :old :new)",
    "(defpackage :geo (:use :cl))", "(in-package :geo)", "(defstruct pt x y)", "(cl:in-package :cl-user)", NULL};
  for (int i = 0; calls_ok[i]; i++) {
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), calls_ok[i], TXN_ACTION, NULL, NULL, &o);
    if (r != TXN_ACCEPTED) fprintf(stderr, "%s: %s %s\n", calls_ok[i], txn_reason_name(r), o.message);
    CHECK(r == TXN_ACCEPTED);
    for (int c = 0; c < o.nchanges; c++)
      store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
    txn_outcome_free(&o);
    txn_commit(W);
  }
  const char *want = "(S1 T T 1 10 6 :THREE :FLOAT :CHAR :KW :SYM :NIL NIL (\"NEW\") 3 NIL)";
  /* a structure's accessors are those of the package it was defined in */
  const char *src = "(list (type-of *s*) (s1-p *s*) (s1-p (world-get :s)) (s1-a *s*) (s1-a (make-s1)) (dbl 3)"
                    " (g 3) (g 2.5d0) (g #\\a) (g :kw) (g 'sym)"
                    " (g nil) (find-package :gone) (mapcar #'package-name (list (find-package :new)))"
                    " (geo::pt-x (geo::make-pt :x 3)) (fboundp 'make-pt))";
  /* the two (eql "abc") methods are one, as their one entry is */
  CHECK(jiti_world_count(txn_state(W), JITI_ENTRY_METHOD) == 7);
  CHECK_STR(check_eval(txn_state(W), src), want);
  char why[4096];
  txn_World *T = restart(&store, why, sizeof why);
  CHECK(T != NULL);
  if (!T) fprintf(stderr, "%s\n", why);
  if (T) {
    CHECK_STR(check_eval(txn_state(T), src), want);
    txn_close(T);
  }
  CHECK(agree(&W, &store, 0, 1, why, sizeof why));
  txn_close(W);
  store_free(&store);
}

/* `calls` accepted one by one, then `src` answers `want` in the live world
** and in the store imported afresh, which agree. */
static void comes_back(const char *calls_ok[], const char *src, const char *want) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  for (int i = 0; calls_ok[i]; i++) {
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), calls_ok[i], TXN_ACTION, NULL, NULL, &o);
    if (r != TXN_ACCEPTED) fprintf(stderr, "%s: %s %s\n", calls_ok[i], txn_reason_name(r), o.message);
    CHECK(r == TXN_ACCEPTED);
    for (int c = 0; c < o.nchanges; c++)
      store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
    txn_outcome_free(&o);
    txn_commit(W);
  }
  CHECK_STR(check_eval(txn_state(W), src), want);
  char why[4096];
  txn_World *T = restart(&store, why, sizeof why);
  CHECK(T != NULL);
  if (!T) fprintf(stderr, "%s\n", why);
  if (T) {
    CHECK_STR(check_eval(txn_state(T), src), want);
    txn_close(T);
  }
  int agreed = agree(&W, &store, 0, 1, why, sizeof why);
  if (!agreed) fprintf(stderr, "%s\n", why);
  CHECK(agreed);
  txn_close(W);
  store_free(&store);
}

/* The definitions kept beside a symbol's cells (types, symbol macros, setf
** expanders, compiler macros, documentation, property lists): the calls
** that would spoil them once stored are refused, and those that once came
** back otherwise than they were made come back the same. */
static void test_defs(void) {
  /* a property list is managed state like a variable's value: what it
  ** holds keeps its package and its structure's slots */
  const char *pl_pkg[] = {"(defpackage :p1 (:use :cl))", "(setf (get 'pl 'p) 'p1::x)", NULL};
  refused(pl_pkg, "(delete-package :p1)", ERROR, "the world's entries name its symbols (plist PL)");
  refused(pl_pkg, "(rename-package :p1 :p2)", ERROR, "(plist PL)");
  const char *pl_st[] = {"(defstruct s1 a b)", "(setf (get 'pl 'p) (list (make-s1 :a 1)))", NULL};
  refused(pl_st, "(defstruct s1 a)", ERROR,
          "cannot redefine the structure S1 with other slots: the world stores instances of it (plist PL)");
  refused(pl_st, "(defstruct s1 a b c)", ERROR, "(plist PL)");
  /* a property list GET cannot read, or that cannot be stored */
  refused(NULL, "(setf (symbol-plist 'pl) (list 'a))", UNSAFE,
          "plist PL would not import back as itself: its property list is not a proper list of indicators");
  refused(NULL, "(let ((l (list 'a 1))) (setf (cdr (last l)) l) (setf (symbol-plist 'pl) l) nil)", UNSAFE,
          "plist PL holds an unexportable value: circular structure");
  /* names of the language, and forms a world cannot make again */
  refused(NULL, "(setf (get 'car 'p) 1)", ERROR, "cannot change the property list of CAR");
  refused(NULL, "(setf (compiler-macro-function 'f) (lambda (f e) (declare (ignore e)) f))", UNSAFE,
          "compiler-macro F holds an unexportable value");
  /* names the store cannot give back; an uninterned symbol's documentation
  ** and properties are scratch, with no entry */
  refused(NULL, "(deftype #:ty () 'integer)", UNSAFE, "type #:TY would not import back as itself: it is named by an uninterned symbol");
  refused(NULL, "(define-symbol-macro #:sm 1)", UNSAFE, "symbol-macro #:SM would not import back");
  refused(NULL, "(defsetf #:acc set-acc)", UNSAFE, "setf-expander #:ACC would not import back");
  refused(NULL, "(define-compiler-macro (setf #:f) (x) x)", UNSAFE, "compiler-macro (SETF #:F) would not import back");
  refused(NULL, "(define-modify-macro #:bump () 1+)", UNSAFE, "macro #:BUMP would not import back");
  const char *scratch[] = {"(setf (documentation '#:f 'function) \"x\" (documentation 'f '#:kind) \"y\")",
                           "(setf (get (make-symbol \"U\") 'p) 1)", NULL};
  comes_back(scratch, "(list (documentation 'f 'function) (get 'u 'p))", "(NIL NIL)");
  /* one name is a type, a structure, or a class */
  const char *st[] = {"(defstruct ty a)", NULL};
  refused(st, "(deftype ty () 'integer)", ERROR, "it names a structure or condition type of the world");
  const char *cl[] = {"(defclass ty () ())", NULL};
  refused(cl, "(deftype ty () 'integer)", ERROR, "it names a class of the world");
  const char *sm[] = {"(define-symbol-macro sm 1)", NULL};
  refused(sm, "(defvar sm 1)", ERROR, "it is a symbol macro");
  const char *var[] = {"(defvar *v* 1)", NULL};
  refused(var, "(define-symbol-macro *v* 1)", ERROR, "it is a special variable");

  /* a class redefined brings the instances a property list or a :class
  ** slot holds up to date, as it does a variable's */
  const char *redef[] = {"(defclass c1 () ((a :initarg :a)))", "(setf (get 'pl 'p) (list (make-instance 'c1 :a 1)))",
                         "(defclass k1 () ((d :allocation :class :initform (make-instance 'c1 :a 2))))",
                         "(make-instance 'k1)", "(defclass c1 () ((a :initarg :a) (b :initform 5)))", NULL};
  comes_back(redef, "(list (slot-value (first (get 'pl 'p)) 'b) (slot-value (slot-value (make-instance 'k1) 'd) 'b))",
             "(5 5)");
  /* a symbol with no home that is given one (IMPORT) brings its property
  ** list: it is stored from then on */
  const char *imported[] = {"(let ((s (make-symbol \"U\"))) (setf (get s 'p) 1) (import s))",
                            "(defpackage :p1 (:use :cl))",
                            "(let ((s (make-symbol \"V\"))) (setf (get s 'p) 2) (import s :p1))", NULL};
  comes_back(imported, "(list (get 'u 'p) (get 'p1::v 'p))", "(1 2)");
  /* documentation keeps the string it was given, not the caller's string
  ** changed later, nor the one documentation returned */
  const char *doc[] = {"(defun f () 1)",
                       "(let ((s (copy-seq \"doc\"))) (setf (documentation 'f 'function) s) (setf (char s 0) #\\z))",
                       "(setf (char (documentation 'f 'function) 0) #\\y)",
                       "(defvar *d* (copy-seq \"var\") )",
                       "(setf (documentation '*d* 'variable) *d*)", "(setf (char *d* 0) #\\x)", NULL};
  comes_back(doc, "(list (documentation 'f 'function) (documentation '*d* 'variable) *d*)",
             "(\"doc\" \"var\" \"xar\")");
  /* the function a type, setf expander, compiler macro or modify macro
  ** makes from its form is analysed at its first call once imported: the
  ** macros it uses may call a function, read a variable or a property list
  ** as they expand, which are imported after it */
  const char *expand[] = {
    "(defun lim-of (n) (list 'quote (list 'integer 0 n)))", "(defmacro upto (n) (lim-of n))",
    "(deftype small () (upto 5))",
    "(defvar *tag* :tagged)", "(defmacro tag () *tag*)",
    "(defsetf kar (c) (v) (list 'setf (list 'car c) (list 'list (tag) v)))",
    "(define-setf-expander kar2 (c) (let ((g (gensym)) (s (gensym)))"
    " (values (list g) (list c) (list s) `(setf (car ,g) (list ,(tag) ,s)) `(car ,g))))",
    "(setf (get 'cfg 'times) 3)", "(defmacro times () (get 'cfg 'times))",
    "(define-compiler-macro sq (x) (list '* x (times)))",
    "(defun one () 1)", "(defmacro dflt () (one))", "(define-modify-macro bump (&optional (d (dflt))) +)", NULL};
  comes_back(expand,
             "(list (typep 5 'small) (typep 6 'small) (let ((c (list 1))) (setf (kar c) 2) c)"
             " (let ((c (list 1))) (setf (kar2 c) 2) c) (funcall (compiler-macro-function 'sq) '(sq 2) nil)"
             " (let ((x 1)) (bump x) x))",
             "(T NIL ((:TAGGED 2)) ((:TAGGED 2)) (* 2 3) 2)");
  /* every kind, defined, used and redefined, with gensyms and in a package */
  const char *all[] = {
    "(deftype small () '(integer 0 9))", "(deftype smaller () '(and small (not (eql 5))))",
    "(define-symbol-macro head (car *pair*))", "(defvar *pair* (list 1 2))",
    "(defun kar (c) (car c))", "(defun set-kar (c v) (setf (car c) (* 10 v)) v)", "(defsetf kar set-kar)",
    "(defmacro defkdr (n) (let ((c (gensym)) (v (gensym)))"
    " `(defsetf ,n (,c) (,v) (list 'progn (list 'setf (list 'cdr ,c) (list 'list ,v)) ,v))))",
    "(defkdr kdr)",
    "(define-setf-expander kar2 (c) (let ((g (gensym)) (s (gensym)))"
    " (values (list g) (list c) (list s) `(progn (setf (car ,g) (+ 1000 ,s)) ,s) `(car ,g))))",
    "(define-modify-macro appendf (&rest l) append \"Append.\")",
    "(defun sq (x) (* x x))", "(define-compiler-macro sq (&whole w x) (if (numberp x) (* x x) w))",
    "(define-compiler-macro (setf kar) (&whole w v c) (declare (ignore v c)) w)",
    "(setf (compiler-macro-function '(setf kar)) nil)",
    "(setf (documentation 'sq 'function) \"Square.\" (documentation 'small 'type) \"Small.\")",
    "(setf (documentation 'sq :note) \"A note.\")",
    "(setf (get 'op 'prec) 1 (get 'op 'gen) (let ((g (gensym))) (list g g)) (get :kw 'p) 2)",
    "(defpackage :app (:use :cl))", "(in-package :app)", "(deftype tiny () '(integer 0 1))",
    "(define-symbol-macro here 7)", "(setf (get 'sym 'p) 3 (documentation 'tiny 'type) \"Tiny.\")",
    "(cl:in-package :cl-user)", "(deftype small () '(integer 0 99))", NULL};
  comes_back(all,
             "(list (typep 50 'small) (typep 5 'smaller) (typep 6 'smaller) (let ((*pair* (list 1 2))) (incf head) *pair*)"
             " (let ((c (list 1 2))) (setf (kar c) 4) c) (let ((c (list 1 2))) (setf (kdr c) 4) c)"
             " (let ((c (list 1 2))) (setf (kar2 c) 4) c) (let ((l (list 1))) (appendf l (list 2)) l)"
             " (funcall (compiler-macro-function 'sq) '(sq 3) nil) (compiler-macro-function '(setf kar))"
             " (documentation 'sq 'function) (documentation 'small 'type) (documentation 'sq :note)"
             " (get 'op 'prec) (let ((l (get 'op 'gen))) (eq (first l) (second l))) (symbol-plist :kw)"
             " (typep 1 'app::tiny) (macroexpand-1 'app::here) (get 'app::sym 'app::p) (documentation 'app::tiny 'type))",
             "(T NIL T (2 2) (40 2) (1 4) (1004 2) (1 2) 9 NIL \"Square.\" \"Small.\" \"A note.\" 1 T (P 2)"
             " T 7 3 \"Tiny.\")");
}

int main(void) {
  int stress = getenv("JITI_GC_STRESS") && getenv("JITI_GC_STRESS")[0] && getenv("JITI_GC_STRESS")[0] != '0';
#ifdef JITI_TXN_GC_STRESS_BUILD
  if (!getenv("JITI_GC_STRESS") || getenv("JITI_GC_STRESS")[0] != '0') stress = 1;
#endif
  stress_unprobed = stress;
  test_each_rule();
  test_allowed();
  test_defs();
  int rounds = stress ? 5 : 100;
#ifdef __SANITIZE_ADDRESS__
  if (!stress) rounds = 50;   /* each call costs several times as much: the paths, not the draws, are the point */
#endif
  if (getenv("JITI_REIMPORT_ROUNDS")) rounds = atoi(getenv("JITI_REIMPORT_ROUNDS"));
  unsigned seed0 = getenv("JITI_REIMPORT_SEED") ? (unsigned)strtoul(getenv("JITI_REIMPORT_SEED"), NULL, 10)
                                                 : 20261207u;
  if (getenv("JITI_REIMPORT_STATS")) stats = calloc(NCALLS, sizeof *stats);
  int failed = 0;
  long steps = 0;
  char why[4096];
  for (int h = 0; h < rounds; h++) {
    Op ops[MAXOPS];
    int n;
    unsigned seed = seed0 + (unsigned)h;
    gen_ops(seed, ops, &n);
    steps += n;
    int at = run_history(ops, n, why, sizeof why);
    CHECK(at < 0);
    if (at >= 0) {
      CallStats *keep = stats;
      stats = NULL;   /* the shrinking's runs are not counted */
      report_failure(seed, ops, n);
      stats = keep;
      if (++failed >= 3) break;
    }
  }
  print_stats();
  fprintf(stderr, "%d histories, %ld calls, first seed %u%s\n", rounds, steps, seed0, stress ? " (GC stress)" : "");
  return CHECK_DONE();
}
