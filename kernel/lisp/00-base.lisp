;;;; 00-base.lisp — the first macros: definitions, conditionals, iteration.
;;;;
;;;; Loaded at state creation before the other library files.  Only special
;;;; forms, built-in (C) functions and macros defined earlier in this file may
;;;; be used.  Everything defined here becomes a locked built-in.

;; Documentation strings given to definitions, by (name . doc-type); those
;; of functions and macros are kept with their lambda (documentation).  A
;; name's documentation is a world entry of its own (%documentation-entry
;; refuses a built-in name and records it as the form that sets it).  The
;; table and the entry keep one copy of the string, which DOCUMENTATION never
;; hands out: changing the caller's string later, or the one it was given,
;; does not change the documentation behind the stored entry.
(let ((docs (make-hash-table :test 'equal)))
  (defun %set-documentation (name doc-type doc)
    (if (or (symbolp name) (consp name))
        (let ((kept (if (stringp doc) (copy-seq doc) doc)))
          (%documentation-entry name doc-type kept)
          (%set-gethash (cons name doc-type) docs kept))
        (%set-object-documentation name doc-type doc))
    doc)
  (defun %documentation (name doc-type)
    (gethash (cons name doc-type) docs)))

(defmacro defvar (name &optional (value nil value-p) (doc nil doc-p))
  `(progn (%declare-special ',name)
          ,(if value-p `(if (boundp ',name) nil (set ',name ,value)) nil)
          ,(if doc-p `(%set-documentation ',name 'variable ,doc) nil)
          ',name))

(defmacro defparameter (name value &optional (doc nil doc-p))
  `(progn (%declare-special ',name) (set ',name ,value)
          ,(if doc-p `(%set-documentation ',name 'variable ,doc) nil)
          ',name))

(defmacro defconstant (name value &optional (doc nil doc-p))
  `(progn (%defconstant ',name ,value)
          ,(if doc-p `(%set-documentation ',name 'variable ,doc) nil)
          ',name))

(defmacro when (test &body body) `(if ,test (progn ,@body) nil))
(defmacro unless (test &body body) `(if ,test nil (progn ,@body)))

(defmacro and (&rest forms)
  (if (null forms) t
      (if (null (cdr forms)) (car forms)
          `(if ,(car forms) (and ,@(cdr forms)) nil))))

(defmacro or (&rest forms)
  (if (null forms) nil
      (if (null (cdr forms)) (car forms)
          (let ((g (gensym)))
            `(let ((,g ,(car forms)))
               (if ,g ,g (or ,@(cdr forms))))))))

(defmacro cond (&rest clauses)
  (if (null clauses) nil
      (let ((c (car clauses)))
        (if (not (consp c)) (error "COND: malformed clause ~S" c))
        (if (null (cdr c))
            (let ((g (gensym)))
              `(let ((,g ,(car c))) (if ,g ,g (cond ,@(cdr clauses)))))
            (if (eq (car c) t)
                `(progn ,@(cdr c))
                `(if ,(car c) (progn ,@(cdr c)) (cond ,@(cdr clauses))))))))

(defmacro return (&optional value) `(return-from nil ,value))

(defmacro prog1 (first &body body)
  (let ((g (gensym))) `(let ((,g ,first)) ,@body ,g)))

(defmacro prog2 (first second &body body)
  (let ((g (gensym))) `(progn ,first (let ((,g ,second)) ,@body ,g))))

(defmacro psetq (&rest pairs)
  (let ((bindings nil) (sets nil))
    (tagbody
     next
       (if (null pairs) (go done))
       (let ((g (gensym)))
         (setq bindings (cons (list g (car (cdr pairs))) bindings))
         (setq sets (cons g (cons (car pairs) sets))))
       (setq pairs (cdr (cdr pairs)))
       (go next)
     done)
    `(let ,(nreverse bindings) (setq ,@(%reverse-pairs sets)) nil)))

;; (g2 b g1 a) -> (a g1 b g2): the setq pairs in original order
(defun %reverse-pairs (l)
  (let ((out nil))
    (tagbody
     next
       (if (null l) (go done))
       (setq out (cons (car (cdr l)) (cons (car l) out)))
       (setq l (cdr (cdr l)))
       (go next)
     done)
    out))

(defmacro declaim (&rest specs)
  `(progn ,@(mapcar (lambda (s)
                      (if (and (consp s) (eq (car s) 'special))
                          `(progn ,@(mapcar (lambda (n) `(%declare-special ',n)) (cdr s)))
                          (if (and (consp s) (eq (car s) 'declaration))
                              `(proclaim ',s)
                              nil)))
                    specs)
          nil))

(defun proclaim (spec)
  (%check-declaration-specifier spec)
  (if (and (consp spec) (eq (car spec) 'special))
      (mapc (lambda (n) (%declare-special n)) (cdr spec)))
  (if (and (consp spec) (eq (car spec) 'declaration))
      (mapc (lambda (n) (%proclaim-declaration n)) (cdr spec)))
  nil)

;; Split a body into (values declarations forms), skipping a doc string when
;; DOC-P and the string is not the last form.
(defun %parse-body (body &optional doc-p)
  (let ((decls nil))
    (tagbody
     next
       (if (and doc-p (stringp (car body)) (cdr body))
           (progn (setq body (cdr body)) (setq doc-p nil) (go next)))
       (if (and (consp (car body)) (eq (car (car body)) 'declare))
           (progn (setq decls (cons (car body) decls)) (setq body (cdr body)) (go next))))
    (values (nreverse decls) body)))

;; case: T or OTHERWISE as the key of the last clause makes it the default.
(defmacro case (key &rest clauses)
  (let ((k (gensym)))
    `(let ((,k ,key))
       (cond ,@(%case-clauses k clauses t)))))

(defun %case-clauses (k clauses default-ok)
  (let ((out nil))
    (tagbody
     next
       (if (null clauses) (go done))
       (let* ((c (car clauses)) (keys (car c)))
         (setq out (cons (cond ((and default-ok (null (cdr clauses)) (or (eq keys t) (eq keys 'otherwise)))
                                `(t nil ,@(cdr c)))
                               ((listp keys) `((member ,k ',keys) nil ,@(cdr c)))
                               (t `((eql ,k ',keys) nil ,@(cdr c))))
                         out)))
       (setq clauses (cdr clauses))
       (go next)
     done)
    (nreverse out)))

(defun %case-keys (clauses)
  (let ((keys nil))
    (mapc (lambda (c)
            (if (listp (car c))
                (setq keys (append keys (car c)))
                (setq keys (append keys (list (car c))))))
          clauses)
    keys))

;; The type-error of ecase, ccase, etypecase and ctypecase, worded as SBCL
;; words it ("3 fell through ECASE expression. Wanted one of (1 2).").
(defun %case-failure (value operator expected)
  (error 'type-error :datum value :expected-type expected
                     :format-control "~S fell through ~S expression.~@[ Wanted one of ~:S.~]"
                     :format-arguments (list value operator (cdr expected))))

;; ecase and ccase have no default clause: T and OTHERWISE are keys.
(defmacro ecase (key &rest clauses)
  (let ((k (gensym)))
    `(let ((,k ,key))
       (cond ,@(%case-clauses k clauses nil)
             (t (%case-failure ,k 'ecase '(member ,@(%case-keys clauses))))))))

;; ccase offers a store-value restart that writes the place and tries again.
(defmacro ccase (keyplace &rest clauses)
  (let ((k (gensym)) (b (gensym "CCASE")) (again (gensym "AGAIN")) (v (gensym "V")))
    `(block ,b
       (tagbody
          ,again
          (let ((,k ,keyplace))
            (return-from ,b
              (cond ,@(%case-clauses k clauses nil)
                    (t (restart-case
                           (%case-failure ,k 'ccase '(member ,@(%case-keys clauses)))
                         (store-value (,v)
                           :report (lambda (s) (format s "Supply a new value of ~s." ',keyplace))
                           (setf ,keyplace ,v)
                           (go ,again)))))))))))

(defun %typecase-clauses (k clauses default-ok)
  (mapcar (lambda (c)
            (if (and default-ok (eq c (car (last clauses))) (or (eq (car c) t) (eq (car c) 'otherwise)))
                `(t nil ,@(cdr c))
                `((typep ,k ',(car c)) nil ,@(cdr c))))
          clauses))

(defmacro typecase (key &rest clauses)
  (let ((k (gensym)))
    `(let ((,k ,key))
       (cond ,@(%typecase-clauses k clauses t)))))

(defmacro etypecase (key &rest clauses)
  (let ((k (gensym)))
    `(let ((,k ,key))
       (cond ,@(%typecase-clauses k clauses nil)
             (t (%case-failure ,k 'etypecase '(or ,@(mapcar #'car clauses))))))))

(defmacro ctypecase (keyplace &rest clauses)
  (let ((k (gensym)) (b (gensym "CTYPECASE")) (again (gensym "AGAIN")) (v (gensym "V")))
    `(block ,b
       (tagbody
          ,again
          (let ((,k ,keyplace))
            (return-from ,b
              (cond ,@(%typecase-clauses k clauses nil)
                    (t (restart-case
                           (%case-failure ,k 'ctypecase '(or ,@(mapcar #'car clauses)))
                         (store-value (,v)
                           :report (lambda (s) (format s "Supply a new value of ~s." ',keyplace))
                           (setf ,keyplace ,v)
                           (go ,again)))))))))))

;;; Iteration.  Each loop is a block NIL around a tagbody whose jumps are
;;; local transfers (no setjmp per iteration); the body is itself a tagbody
;;; so it may contain tags, as Common Lisp allows.

(defmacro dolist (spec &body body)
  (let ((var (car spec)) (list (car (cdr spec))) (result (cdr (cdr spec)))
        (l (gensym "L")) (top (gensym "TOP")) (end (gensym "END")))
    (multiple-value-bind (decls forms) (%parse-body body)
      `(block nil
         (let ((,l ,list))
           (tagbody
              ,top
              (if (atom ,l) (go ,end))
              (let ((,var (car ,l)))
                ,@decls
                (tagbody ,@forms))
              (setq ,l (cdr ,l))
              (go ,top)
              ,end))
         ,@(if result
               `((let ((,var nil)) (declare (ignorable ,var)) ,@decls ,@result))
               nil)))))

(defmacro dotimes (spec &body body)
  (let ((var (car spec)) (count (car (cdr spec))) (result (cdr (cdr spec)))
        (n (gensym "N")) (top (gensym "TOP")) (end (gensym "END")))
    (multiple-value-bind (decls forms) (%parse-body body)
      `(block nil
         (let ((,n ,count) (,var 0))
           ,@decls
           (tagbody
              ,top
              (if (>= ,var ,n) (go ,end))
              (tagbody ,@forms)
              (setq ,var (1+ ,var))
              (go ,top)
              ,end)
           ,@result)))))

(defun %do-expand (specs end body parallel)
  (let ((top (gensym "TOP")) (stop (gensym "END"))
        (bindings (mapcar (lambda (s)
                            (if (consp s) (list (car s) (car (cdr s))) s))
                          specs))
        (steps nil))
    (mapc (lambda (s)
            (if (and (consp s) (cdr (cdr s)))
                (setq steps (append steps (list (car s) (car (cdr (cdr s))))))))
          specs)
    (multiple-value-bind (decls forms) (%parse-body body)
      `(block nil
         (,(if parallel 'let 'let*) ,bindings
          ,@decls
          (tagbody
             ,top
             (if ,(car end) (go ,stop))
             (tagbody ,@forms)
             (,(if parallel 'psetq 'setq) ,@steps)
             (go ,top)
             ,stop)
          ,@(cdr end))))))

(defmacro do (specs end &body body) (%do-expand specs end body t))
(defmacro do* (specs end &body body) (%do-expand specs end body nil))

(defmacro multiple-value-list (form) `(multiple-value-call #'list ,form))

;;; prog and prog*: a block NIL around bindings around a tagbody.
(defun %prog-expand (let-op vars body)
  (multiple-value-bind (decls forms) (%parse-body body)
    `(block nil (,let-op ,vars ,@decls (tagbody ,@forms)))))

(defmacro prog (vars &body body) (%prog-expand 'let vars body))
(defmacro prog* (vars &body body) (%prog-expand 'let* vars body))

(defmacro define-symbol-macro (name expansion)
  `(progn (%define-symbol-macro ',name ',expansion) ',name))

(defmacro nth-value (n form) `(nth ,n (multiple-value-list ,form)))


;; (in-package name): make the package named NAME current.
(defmacro in-package (name)
  `(eval-when (:compile-toplevel :load-toplevel :execute)
     (%in-package ,(string name))))

;; (deftype name () body...) expands into a call of %DEFTYPE with the whole
;; form, which makes the expander from the form, in the null lexical
;; environment (as for a top-level DEFTYPE), and records the form as the
;; type's entry: calling it directly does what the DEFTYPE would.
(defmacro deftype (&whole whole name lambda-list &body body)
  (declare (ignore name lambda-list body))
  `(%deftype ',whole))

(defun %deftype (whole)
  (unless (and (consp whole) (eq (car whole) 'deftype) (consp (cdr whole)) (symbolp (car (cdr whole)))
               (consp (cdr (cdr whole))) (listp (cdr (cdr (cdr whole)))))
    (error "~S is not a DEFTYPE form" whole))
  (let ((name (car (cdr whole))) (args (gensym "ARGS")))
    ;; the expander takes the specifier's arguments; an &optional or &key
    ;; parameter without a default defaults to *, as CLHS deftype says
    (multiple-value-bind (decls forms) (%parse-body (cdr (cdr (cdr whole))) t)
      (%define-type name (%definition-function
                          `(lambda (&rest ,args)
                             (destructuring-bind ,(%deftype-lambda-list (car (cdr (cdr whole)))) ,args
                               ,@decls
                               (block ,name ,@forms))))))
    (%record-definition :type name whole)))

;; A deftype lambda list as destructuring-bind takes it: defaults of * for
;; &optional and &key parameters written without one; &environment dropped.
(defun %deftype-lambda-list (ll &optional defaulting)
  (cond ((atom ll) ll)
        ((eq (car ll) '&environment) (%deftype-lambda-list (cdr (cdr ll)) defaulting))
        (t (let ((p (car ll)))
             (cons (cond ((member p '(&optional &key)) (setq defaulting t) p)
                         ((member p lambda-list-keywords) (setq defaulting nil) p)
                         ((and defaulting (symbolp p)) (list p ''*))
                         ((and defaulting (consp p) (null (cdr p))) (list (car p) ''*))
                         (t p))
                   (%deftype-lambda-list (cdr ll) defaulting))))))

(defun complement (f) (lambda (&rest args) (not (apply f args))))
(defun constantly (v) (lambda (&rest args) (declare (ignore args)) v))

(defmacro with-output-to-string (spec &body body)
  ;; (var &optional string &key element-type): with a string (which must
  ;; have a fill pointer) the output is appended to it and the body's
  ;; values are returned; otherwise a fresh string of the output.  The
  ;; element type is evaluated either way (a string given has its own).
  (let* ((var (car spec)) (string (car (cdr spec)))
         (etype (getf (cdr (cdr spec)) :element-type ''character)))
    (multiple-value-bind (decls forms) (%parse-body body)
      (if string
          `(let ((,var (progn ,etype (%make-string-output-stream-to ,string))))
             ,@decls
             (unwind-protect (progn ,@forms) (close ,var)))
          `(let ((,var (make-string-output-stream :element-type ,etype)))
             ,@decls
             ,@forms
             (get-output-stream-string ,var))))))

(defmacro with-input-from-string (spec &body body)
  ;; (var string &key index start end): INDEX, a place, is set to the index
  ;; of the first character not read when the body returns
  (let ((var (car spec)) (string (car (cdr spec))) (keys (cdr (cdr spec))))
    (let ((index (getf keys :index)) (start (getf keys :start 0)) (end (getf keys :end)))
      (multiple-value-bind (decls forms) (%parse-body body)
        `(let ((,var (make-string-input-stream ,string ,start ,end)))
           ,@decls
           ,(if index
                `(multiple-value-prog1 (progn ,@forms)
                   (setf ,index (%string-input-stream-index ,var)))
                `(progn ,@forms)))))))

;; (define-foreign name "library" "symbol" result-type (argument-types...)):
;; one call with the whole form (ffi.c), so the helper does exactly what the
;; declaration says.
(defmacro define-foreign (&whole whole &rest parts)
  (declare (ignore parts))
  `(%define-foreign ',whole))
