;;;; circular.lisp -- circular and self-nested structure reaching the
;;;; evaluator, packages, sequences, types, format and the printer.
;;;;
;;;; Where SBCL signals an error the test is portable.  jiti's own promise
;;;; is stronger: a C walk that needs a proper list signals a TYPE-ERROR on
;;;; a circular one, after about three passes over it (SBCL often loops
;;;; there, until the heap is full); those tests are #+jiti.  A walk that
;;;; calls the program's code for each element (mapcar, every, member-if,
;;;; reduce, a :test function) pays fuel for those calls and may go round a
;;;; circular list as SBCL does: a program can mean it (tests/c/test_limits.c
;;;; bounds them by the fuel limit).
(suite "circular")
(setf *print-circle* t)   ; a failure report prints its data

(defun circ (&rest xs)
  (let ((l (copy-list xs)))
    (setf (cdr (last l)) l)
    l))
(defun car-circ ()
  (let ((x (list 'a)))
    (setf (car x) x)
    x))
(defvar *c* (circ 'a 'b))

;;; ------------------------------------------- circular lists that work
(is-eql (list-length *c*) nil)
(is-eql (list-length '(1 2 3)) 3)
(is-eql (nth 5 *c*) 'b)
(is (eq (nthcdr 4 *c*) *c*))
(is (eq (member 'b *c*) (cdr *c*)))
(is-equal (ldiff *c* (cdr *c*)) '(a))
(is (tailp (cdr *c*) *c*))
(is-eql (first (last (list 1 *c*))) *c*)
;; a shorter list ends a mapping over a circular one
(is-equal (mapcar #'+ '(1 2 3) (circ 10)) '(11 12 13))
(is-equal (mapcar #'cons '(x y z) (circ 1 2)) '((x . 1) (y . 2) (z . 1)))
(is-equalp (map 'vector #'+ '(1 2 3) (circ 10)) #(11 12 13))
(is (every #'< (circ 0) '(1 2 3)))
;; a generator: the function leaves the walk
(is-eql (block found (mapc (lambda (x) (when (eq x 'b) (return-from found 'done))) *c*)) 'done)
(is-equal (let ((*print-circle* t)) (prin1-to-string *c*)) "#1=(A B . #1#)")
(is-equal (let ((*print-circle* t)) (prin1-to-string (car-circ))) "#1=(#1#)")
(is (equal *c* *c*))
(is (typep (sxhash *c*) '(integer 0)))          ; hashing looks at a bounded part
(is (typep (sxhash (car-circ)) '(integer 0)))
(is-eql (let ((h (make-hash-table :test 'equal)))
          (setf (gethash *c* h) 1)
          (gethash *c* h))
        1)
(is (eq (cdr (append '(1) *c*)) *c*))   ; the last list is not copied

;;; ------------------------------- errors SBCL signals too (portable)
(signals error (eval (list* 'dolist (circ 'x) nil)))
(signals error (eval (list* 'defvar (circ 'v))))
(signals error (eval (list* 'defstruct (circ 's))))
(signals error (eval (list* 'in-package (circ "CL-USER"))))
(signals error (eval (list* 'if (circ 1))))
(signals error (eval (list* 'quote (circ 1))))
(signals error (eval (list* 'define-condition 'circ-condition (circ 'error) nil)))
(signals error (eval (list* 'progv (circ ''a) ''(1) '(1))))
(signals error (destructuring-bind (a b c) (circ 1 2) (list a b c)))
(signals error (destructuring-bind (a &optional b) (circ 1) (list a b)))
(signals error (adjust-array (make-array 2 :adjustable t) (circ 2)))

;;; -------------------------- jiti: a type-error where a list must end
;;; the analyser, on forms made at run time
#+jiti
(progn
  (signals type-error (eval (cons 'progn (circ 1))))
  (signals type-error (eval (list* 'let (circ '(x 1)) nil)))
  (signals type-error (eval (list* 'let '((x 1)) (circ 'x))))
  (signals type-error (eval (list* 'let* (circ '(x 1)) nil)))
  (signals type-error (eval (cons 'setq (circ 'circ-v 1))))
  (signals type-error (eval (cons 'tagbody (circ 'a))))
  (signals type-error (eval (list* 'lambda (circ 'x) nil)))
  (signals type-error (eval (list 'function (list* 'lambda '(x) (circ 'x)))))
  (signals type-error (eval (list* 'defun 'circ-f (circ 'x) nil)))
  (signals type-error (eval (list* 'defun 'circ-f '(x) (circ 'x))))
  (signals type-error (eval (list* 'defmacro 'circ-m (circ 'x) nil)))
  (signals type-error (eval (list* 'defmacro 'circ-m '(x) (circ 'x))))
  (signals type-error (eval (list* 'flet (circ '(g () 1)) nil)))
  (signals type-error (eval (list* 'labels (circ '(g () 1)) nil)))
  (signals type-error (eval (list* 'macrolet (circ '(g () 1)) nil)))
  (signals type-error (eval (list* 'symbol-macrolet (circ '(g 1)) nil)))
  (signals type-error (eval (list* 'block 'b (circ 1))))
  (signals type-error (eval (list* 'catch ''x (circ 1))))
  (signals type-error (eval (list* 'unwind-protect 1 (circ 2))))
  (signals type-error (eval (list* 'multiple-value-bind (circ 'a) '(values 1 2) nil)))
  (signals type-error (eval (list* 'multiple-value-call '#'list (circ 1))))
  (signals type-error (eval (list* 'locally (circ '(declare (special x))))))
  (signals type-error (eval (list 'let nil (list 'declare (cons 'special (circ 'x))))))
  (signals type-error (eval (list* 'eval-when (circ :execute) nil)))
  (signals type-error (eval (cons 'list (circ 1))))
  (signals type-error (eval (cons '+ (circ 1))))
  (signals type-error (eval (list* 'and (circ 1))))
  (signals type-error (eval (list* 'cond (circ '(nil 1)))))
  (signals type-error (eval (list* 'when t (circ 1))))
  (signals type-error (eval (list 'quasiquote (circ 'a))))
  (signals type-error (eval (list* 'handler-case 1 (circ '(error () 2)))))
  (signals type-error (eval (list* 'destructuring-bind (circ 'a) '(list 1) nil)))
  (signals type-error (destructuring-bind (&key a) (circ :b 1) a))
  (signals type-error (macroexpand (cons 'when (circ 1))))
  (signals type-error (progv (circ 'a) '(1) 1))
  (signals type-error (apply #'+ (circ 1)))
  (signals type-error (values-list *c*)))

;;; packages
#+jiti
(progn
  (signals type-error (export (circ 'circ-foo)))
  (signals type-error (unexport (circ 'circ-foo)))
  (signals type-error (import (circ 'circ-foo)))
  (signals type-error (shadowing-import (circ 'circ-foo)))
  (signals type-error (shadow (circ "CIRC-FOO")))
  (signals type-error (use-package (circ "COMMON-LISP")))
  (signals type-error (unuse-package (circ "COMMON-LISP")))
  (is (member (find-package "COMMON-LISP") (package-use-list *package*)))   ; nothing changed
  (signals type-error (make-package "CIRC-P1" :use (circ "COMMON-LISP")))
  (signals type-error (make-package "CIRC-P2" :nicknames (circ "CIRC-Q")))
  (signals type-error (rename-package (make-package "CIRC-P3" :use nil) "CIRC-P3" (circ "CIRC-R")))
  (signals type-error (eval (list* 'defpackage "CIRC-P4" (circ '(:use "COMMON-LISP")))))
  ;; the lists a package hands out are copies: changing one changes nothing
  (let ((p (make-package "CIRC-P5" :use '("COMMON-LISP"))))
    (let ((uses (package-use-list p)))
      (setf (cdr uses) uses))
    (is-eql (length (package-use-list p)) 1)
    (is-eql (find-symbol "CAR" p) 'car)))

;;; lists and sequences
#+jiti
(progn
  (signals type-error (length *c*))
  (signals type-error (reverse *c*))
  (signals type-error (nreverse (circ 1 2)))
  (signals type-error (append *c* '(1)))
  (signals type-error (nconc (list 1) (circ 2) (list 3)))
  (signals type-error (last *c*))
  (signals type-error (butlast *c*))
  (signals type-error (copy-list *c*))
  (signals type-error (copy-alist (circ '(a . 1))))
  (signals type-error (copy-seq *c*))
  (signals type-error (copy-tree *c*))
  (signals type-error (revappend *c* nil))
  (signals type-error (ldiff *c* 'z))
  (signals type-error (tailp 'z *c*))
  (signals type-error (member 'z *c*))
  (signals type-error (member "z" *c* :test #'equal))
  (signals type-error (assoc 'z (circ '(a . 1))))
  (signals type-error (adjoin 'z *c*))
  (signals type-error (getf (circ :a 1) :z))
  (signals type-error (get-properties (circ :a 1) '(:z)))
  (signals type-error (find 'z *c*))
  (signals type-error (position 'z *c*))
  (signals type-error (count 'a *c*))
  (signals type-error (remove 'z *c*))
  (signals type-error (subseq *c* 0))
  (signals type-error (concatenate 'list *c*))
  (signals type-error (fill (circ 1 2) 0))
  (signals type-error (sort (circ 3 1 2) #'<))
  (signals type-error (union *c* '(1)))
  (signals type-error (subst 'x 'z *c*))
  (signals type-error (sublis '((a . b)) *c*))
  (signals type-error (tree-equal *c* (circ 'a 'b)))
  (signals type-error (map 'vector #'identity *c*))
  (signals type-error (coerce *c* 'vector))
  (signals type-error (make-array 3 :initial-contents *c*))
  (signals type-error (let ((s (gensym))) (setf (symbol-plist s) (circ 'a 1)) (get s 'b)))
  (signals type-error (let ((s (gensym))) (setf (symbol-plist s) (circ 'a 1)) (remprop s 'b)))
  ;; a tree nested in itself through its cars: the depth limit or a storage
  ;; condition, never a crash
  (signals error (equal (car-circ) (car-circ)))
  (signals error (equal *c* (circ 'a 'b)))
  (signals error (equalp *c* (circ 'a 'b)))
  (signals error (world-put :circular *c*)))

;;; types, format, conditions, the reader
#+jiti
(progn
  (signals type-error (typep 1 (cons 'or (circ 'string))))
  (signals type-error (typep 1 (cons 'and (circ 'integer))))
  (signals type-error (typep 1 (list* 'member (circ 2))))
  (signals type-error (subtypep 'integer (cons 'or (circ 'string))))
  (signals type-error (subtypep (list* 'member (circ 1)) 'integer))
  (signals type-error (coerce 1 (cons 'or (circ 'single-float))))
  (signals type-error (format nil "~{~a~}" *c*))
  (signals type-error (format nil "~:{~a~}" (circ '(1))))
  (signals type-error (apply #'format nil "~a" *c*))
  (signals type-error (apply (formatter "~a") (make-string-output-stream) *c*))
  (signals type-error (princ-to-string (make-condition 'simple-error :format-control "~a"
                                                                    :format-arguments *c*)))
  (signals type-error (read-from-string "#+#1=(:or :no-such-feature . #1#) 1 2")))
;;; A specifier or feature expression nested in itself through its car
;;; (#1=(:not #1#)) ends at the depth limit, which no handler sees: the C
;;; test tests/c/test_limits.c runs those, and the macros (handler-bind ...)
;;; whose expanders walk a circular list in Lisp, under a fuel limit.

(done)
