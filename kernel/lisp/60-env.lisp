;;;; 60-env.lisp — functions and macros about the environment of a
;;;; program: compiling (there is no compiler: code is analysed once),
;;;; symbols made by name, hash-table iteration by macro.

;; (compile name &optional definition) => function-or-name, warnings-p,
;; failure-p.  Code is analysed when it is defined, so there is nothing
;; more to do: a lambda expression becomes a function, a function stays
;; itself, and a name is returned as it is.
(defun compile (name &optional (definition nil definition-p))
  (let ((fn (cond ((not definition-p)
                   (unless name (error "COMPILE: NIL with no definition"))
                   (or (macro-function name) (fdefinition name)))
                  ((functionp definition) definition)
                  ((and (consp definition) (eq (car definition) 'lambda))
                   (coerce definition 'function))
                  (t (error 'type-error :datum definition
                                        :expected-type '(or function (cons (eql lambda) list)))))))
    (when (and name definition-p)
      (setf (fdefinition name) fn))
    (values (or name fn) nil nil)))

;; (gentemp &optional (prefix "T") package): a fresh symbol interned in
;; PACKAGE whose name is PREFIX followed by a number.  The counter is the
;; function's own (a closed-over variable).
(let ((counter 0))
  (defun gentemp (&optional (prefix "T") (package nil package-p))
    (check-type prefix string)
    (loop
      (setq counter (+ counter 1))
      (let ((name (format nil "~a~d" prefix counter)))
        (unless (if package-p (find-symbol name package) (find-symbol name))
          (return (if package-p (intern name package) (intern name))))))))

;; (with-hash-table-iterator (name table) body): (name) returns the next
;; entry as (values t key value), or NIL when there are no more.  The
;; entries are those of the moment the form is entered.
(defmacro with-hash-table-iterator ((name table) &body body)
  (let ((entries (gensym "ENTRIES")))
    `(let ((,entries (let ((l nil))
                       (maphash (lambda (k v) (setq l (cons (cons k v) l))) ,table)
                       (nreverse l))))
       (macrolet ((,name ()
                    '(if ,entries
                         (let ((e (car ,entries)))
                           (setq ,entries (cdr ,entries))
                           (values t (car e) (cdr e)))
                         nil)))
         ,@body))))

;; (time form): evaluate FORM, print how long it took to *trace-output*,
;; return its values.
(defun %time (thunk)
  (let ((real (get-internal-real-time)) (run (get-internal-run-time)))
    (let ((values (multiple-value-list (funcall thunk))))
      (format *trace-output* "~&Evaluation took:~%  ~,6f seconds of real time~%  ~,6f seconds of run time~%"
              (/ (- (get-internal-real-time) real) internal-time-units-per-second)
              (/ (- (get-internal-run-time) run) internal-time-units-per-second))
      (values-list values))))

(defmacro time (form) `(%time (lambda () ,form)))


;; Compiler macros.  An implementation may ignore them, and jiti does: a
;; definition is kept (compiler-macro-function, meta.c, returns it, for code
;; that calls it by hand) but calls are never rewritten through it.  Like
;; DEFTYPE, DEFINE-COMPILER-MACRO expands into a call with the whole form,
;; which makes the function from the form (in the null lexical environment)
;; and keeps the form as the name's compiler-macro entry.  A function set
;; with (setf compiler-macro-function) has no form: a world cannot keep it.
(defun (setf compiler-macro-function) (function name &optional environment)
  (declare (ignore environment))
  (%store-compiler-macro name function nil))

(defmacro define-compiler-macro (&whole whole name lambda-list &body body)
  (declare (ignore name lambda-list body))
  `(%define-compiler-macro ',whole))

(defun %define-compiler-macro (whole)
  (unless (and (consp whole) (eq (car whole) 'define-compiler-macro) (consp (cdr whole))
               (consp (cddr whole)) (listp (caddr whole)) (listp (cdddr whole)))
    (error "~S is not a DEFINE-COMPILER-MACRO form" whole))
  (let* ((name (cadr whole)) (lambda-list (caddr whole)) (body (cdddr whole))
         (form (gensym "FORM")) (env (gensym "ENV"))
         (whole-var (and (eq (car lambda-list) '&whole) (cadr lambda-list)))
         (rest (if whole-var (cddr lambda-list) lambda-list))
         (envp (member '&environment rest))
         (env-var (cadr envp))
         (rest (if envp (append (ldiff rest envp) (cddr envp)) rest))
         ;; the body is in a block named like the function (CLHS 3.4.11);
         ;; a doc string is the function's own (documentation x 'compiler-macro)
         (doc (and (stringp (car body)) (cdr body) (car body)))
         (block-name (if (consp name) (cadr name) name)))
    (multiple-value-bind (decls forms) (%parse-body body t)
      (%store-compiler-macro
       name
       (%definition-function
        `(function (lambda (,form ,env)
                     ,@(and doc (list doc))
                     (declare (ignorable ,env))
                     (let (,@(and whole-var `((,whole-var ,form))) ,@(and env-var `((,env-var ,env))))
                       (destructuring-bind ,rest
                           (if (eq (car ,form) 'funcall) (cddr ,form) (cdr ,form))
                         ,@decls
                         (block ,block-name ,@forms))))))
       whole))
    name))

;; Every function is analysed when it is made: all are compiled functions.
(defun compiled-function-p (object) (functionp object))

;; There is no compiler to batch warnings for: the body runs as it is.
(defmacro with-compilation-unit ((&rest options) &body body)
  (declare (ignore options))
  `(progn ,@body))

;; (documentation x doc-type): a doc string given to a definition or set
;; with (setf documentation); else what the object or name carries (a
;; function's, macro's, class's or generic function's own).  A copy: the
;; string kept is part of a stored definition, which a change in place
;; would alter behind the world's back.
;;
;; An object's documentation is its name's, when the name still names it
;; (a function, a class): what a world keeps is a name's.  Other objects'
;; (a lambda's, a method's, a package's) is not kept, as the standard
;; allows: (setf documentation) returns the string and keeps nothing.
(defun %documented-name (x doc-type)
  (cond ((functionp x)
         (let ((name (nth-value 2 (function-lambda-expression x))))
           (if (and name
                    (or (symbolp name) (and (consp name) (eq (car name) 'setf) (consp (cdr name))
                                            (symbolp (car (cdr name))) (null (cdr (cdr name)))))
                    (ignore-errors (eq (fdefinition name) x)))
               (values name (if (eq doc-type t) 'function doc-type))
               nil)))
        ((typep x 'class)
         (let ((name (class-name x)))
           (if (and name (symbolp name) (eq (find-class name nil) x))
               (values name (if (eq doc-type t) 'type doc-type))
               nil)))
        (t nil)))

(defun %documentation-of (x doc-type)
  (multiple-value-bind (name type) (%documented-name x doc-type)
    (if name
        (documentation name type)
        (let ((doc (multiple-value-bind (doc found) (%documentation x doc-type)
                     (cond (found doc)
                           ((eq doc-type 'variable) nil)
                           ((eq doc-type 'method-combination)
                            (and (symbolp x) (%method-combination-documentation x)))
                           ((eq doc-type 'compiler-macro)
                            (let ((cm (and (or (symbolp x) (consp x)) (compiler-macro-function x))))
                              (and cm (%function-documentation cm 'function))))
                           (t (%function-documentation x doc-type))))))
          (if (stringp doc) (copy-seq doc) doc)))))

(defgeneric documentation (x doc-type)
  (:documentation "(documentation x doc-type) The documentation string of X as DOC-TYPE (FUNCTION, VARIABLE, TYPE, STRUCTURE, SETF, COMPILER-MACRO, METHOD-COMBINATION or T), or NIL.")
  (:method (x doc-type) (%documentation-of x doc-type)))

(defgeneric (setf documentation) (new-value x doc-type)
  (:documentation "(setf (documentation x doc-type) new-value) Set the documentation string of X as DOC-TYPE.")
  (:method (new-value x doc-type) (%set-documentation x doc-type new-value)))

(defun %set-object-documentation (x doc-type new-value)
  (check-type new-value (or null string))
  (multiple-value-bind (name type) (%documented-name x doc-type)
    (if name (%set-documentation name type new-value) new-value)))

;; Tracing (trace.c keeps the set, for the transaction).  (trace name...)
;; traces the functions the names have now (a name's later redefinition
;; is not traced) and returns the names; (trace) returns the traced names.
;; (untrace name...) stops tracing them, (untrace) all of them.  A call of
;; a traced function prints "depth: (name args...)" and then "depth: name
;; returned values..." on *trace-output*, indented by its depth.
;; %trace-quiet and %trace-depth are special variables trace.c makes.

(defun %trace-call (name fn args)
  (let ((%trace-depth (1+ %trace-depth)))
    (let ((%trace-quiet t))
      (format *trace-output* "~&~vT~D: ~S~%" (* 2 %trace-depth) (1- %trace-depth) (cons name args)))
    (let ((values (multiple-value-list (%call-untraced fn args))))
      (let ((%trace-quiet t))
        (format *trace-output* "~&~vT~D: ~S returned~{ ~S~}~%" (* 2 %trace-depth) (1- %trace-depth) name values))
      (values-list values))))

(defun %trace-names ()
  (reverse (mapcar #'cdr (%traced))))

(defun %trace (names)
  (dolist (name names)
    (unless (or (symbolp name) (and (consp name) (eq (car name) 'setf) (consp (cdr name))
                                    (symbolp (car (cdr name))) (null (cdr (cdr name)))))
      (error 'type-error :datum name :expected-type '(or symbol (cons (eql setf) (cons symbol null)))))
    (when (and (symbolp name) (macro-function name))
      (error "TRACE: ~S names a macro; only functions are traced" name))
    (when (eq (symbol-package (if (consp name) (car (cdr name)) name)) (symbol-package '%trace))
      (error "TRACE: ~S is the kernel's own helper and cannot be traced" name))
    (if (fboundp name)
        (%set-traced (cons (cons (fdefinition name) name) (remove name (%traced) :key #'cdr :test #'equal)))
        (warn "~S is undefined, not tracing." name)))
  (if names (remove-if-not (lambda (n) (member n (%traced) :key #'cdr :test #'equal)) names) (%trace-names)))

(defun %untrace (names)
  (%set-traced (if names
                   (remove-if (lambda (e) (member (cdr e) names :test #'equal)) (%traced))
                   nil))
  nil)

(defmacro trace (&rest names) `(%trace ',names))
(defmacro untrace (&rest names) `(%untrace ',names))

;; (disassemble fn) => NIL: there is no machine code; what is printed on
;; *standard-output* is the function and, when it is known, the lambda
;; expression the evaluator analysed.
(defun disassemble (fn)
  (let ((f (cond ((functionp fn) fn)
                 ((and (consp fn) (eq (car fn) 'lambda)) (coerce fn 'function))
                 ((and (symbolp fn) fn (macro-function fn)) (macro-function fn))
                 ((or (and (symbolp fn) fn)
                      (and (consp fn) (eq (car fn) 'setf) (consp (cdr fn)) (symbolp (car (cdr fn)))
                           (null (cdr (cdr fn)))))
                  (fdefinition fn))
                 (t (error 'type-error :datum fn
                                       :expected-type '(or function symbol (cons (eql setf) (cons symbol null))))))))
    (format t "~&; ~S~%; jiti has no machine code: it evaluates the analysed form~@[:~%~S~]~%"
            f (function-lambda-expression f))
    nil))

;; (inspect object): not interactive (a world has nobody to answer): it
;; describes OBJECT on *standard-output* and returns no values.
(defun inspect (object)
  (describe object)
  (values))

;; (step form): a world has nobody to step with: the form is evaluated as
;; it is, and its values returned.
(defmacro step (form) `(progn ,form))

(defun ed (&optional x)
  (declare (ignore x))
  (error "ED is not available inside a world: a world has no editor and no terminal (edit the source and send it again)"))

(defun dribble (&optional pathname)
  (declare (ignore pathname))
  (error "DRIBBLE is not available inside a world: a world has no terminal session to record (its calls' output is returned with them): write a file of the world's own with open"))

;; A proclamation's declaration specifier, checked as CLHS 3.3.3 shapes it
;; (only SPECIAL is acted on; the others are accepted and ignored).
(defun %check-declaration-specifier (spec)
  (flet ((bad () (error 'type-error :datum spec :expected-type '(cons symbol list)))
         (fname-p (n) (or (symbolp n) (and (consp n) (eq (car n) 'setf) (consp (cdr n))
                                            (symbolp (car (cdr n))) (null (cdr (cdr n)))))))
    (unless (and (consp spec) (ignore-errors (list-length spec))) (bad))
    (let ((id (car spec)) (args (cdr spec)))
      (cond ((member id '(special declaration))
             (unless (every #'symbolp args) (bad)))
            ((member id '(inline notinline))
             (unless (every #'fname-p args) (bad)))
            ((eq id 'optimize)
             (dolist (q args)
               (unless (or (symbolp q)
                           (and (consp q) (symbolp (car q)) (consp (cdr q)) (null (cdr (cdr q)))
                                (typep (car (cdr q)) '(integer 0 3))))
                 (bad))))
            ((eq id 'type)
             (unless (and (consp args) (every #'symbolp (cdr args))) (bad)))
            ((eq id 'ftype)
             (unless (and (consp args) (every #'fname-p (cdr args))) (bad)))
            ((not (symbolp id)) (unless (consp id) (bad)))))
    spec))

;; (setf (macro-function symbol &optional environment) function): the
;; macro expands through FUNCTION (form env).  A world cannot store a macro
;; set so (it has no DEFMACRO form): the commit that would is refused.
(defun (setf macro-function) (function symbol &optional environment)
  (when environment
    (error "(SETF MACRO-FUNCTION): only global macros can be set (the environment must be NIL)"))
  (unless (functionp function) (error 'type-error :datum function :expected-type 'function))
  (%install-macro-function symbol (lambda (form env) (funcall function form env)))
  function)
