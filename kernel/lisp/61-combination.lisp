;;;; 61-combination.lisp — method combinations other than the standard one.
;;;;
;;;; The standard combination is run by the kernel itself (generic.c).  A
;;;; generic function whose defgeneric names another one, (:method-combination
;;;; NAME option...), gets its effective methods from %COMBINED-METHOD, which
;;;; the kernel calls when a call misses the function's dispatch cache: the
;;;; combination turns the applicable methods (most specific first) into an
;;;; effective method form, of CALL-METHOD and MAKE-METHOD, and that form
;;;; becomes a function of the call's arguments, cached like any effective
;;;; method until a method, a class or a combination changes.
;;;;
;;;; A combination is kept by name as (kind documentation function
;;;; arguments-lambda-list); FUNCTION takes the generic function, the methods
;;;; and the options of the (:method-combination ...) option and returns the
;;;; effective method form.  The built-in ones are short forms defined below;
;;;; a program's DEFINE-METHOD-COMBINATION is a world entry holding its form,
;;;; which an import evaluates again.

(let ((table (make-hash-table)))
  (defun %method-combination (name) (gethash name table))
  (defun %store-method-combination (name definition)
    (setf (gethash name table) definition)
    (%clos-changed)
    name))

(defun invalid-method-error (method format-control &rest args)
  (error "invalid method error for ~S: ~?" method format-control args))

(defun method-combination-error (format-control &rest args)
  (error "method combination error: ~?" format-control args))

;; CALL-METHOD and MAKE-METHOD are what an effective method form is written
;; with: local macros of the function made from it, where a variable of
;; that function (ARGS, an uninterned symbol) holds the arguments of the
;; call.  A MAKE-METHOD's form is the body of a method of its own, which
;; binds ARGS to the arguments it is called with (call-next-method may pass
;; others).  Outside an effective method form they are errors.
(defun %em-method (x args)
  (cond ((typep x 'method) `',x)
        ((and (consp x) (eq (car x) 'make-method) (consp (cdr x)) (null (cdr (cdr x))))
         `(%make-method (lambda (&rest ,args) (declare (ignorable ,args)) ,(car (cdr x)))))
        (t (error "CALL-METHOD: ~S is neither a method nor (MAKE-METHOD form)" x))))

(defun %call-method-form (method next-methods args)
  (unless (listp next-methods)
    (error "CALL-METHOD: the next methods ~S are not a list" next-methods))
  `(%call-method ,(%em-method method args)
                 (list ,@(mapcar (lambda (m) (%em-method m args)) next-methods))
                 ,args))

(defmacro call-method (method &optional next-methods)
  (declare (ignore method next-methods))
  (error "CALL-METHOD is only meaningful in an effective method form, which a method combination returns"))

(defmacro make-method (form)
  (declare (ignore form))
  (error "MAKE-METHOD is only meaningful as an argument of CALL-METHOD in an effective method form"))

;; The :arguments lambda list of a long form, bound to the call's arguments:
;; its required parameters to the generic function's first arguments (NIL
;; past the last), &optional ones to those after them, &rest to the rest,
;; &key ones from it, &whole to them all.
(defun %em-argument-bindings (ll args)
  (let ((bindings '()) (state :required) (i 0) (rest-var nil))
    (when (eq (car ll) '&whole)
      (push `(,(car (cdr ll)) ,args) bindings)
      (setq ll (cdr (cdr ll))))
    (dolist (p ll)
      (cond ((member p '(&optional &rest &key &aux &allow-other-keys))
             (setq state p))
            ((eq state :required)
             (push `(,p (nth ,i ,args)) bindings) (incf i))
            ((eq state '&optional)
             (let ((var (if (consp p) (car p) p)) (default (if (consp p) (car (cdr p)) nil)))
               (push `(,var (if (nthcdr ,i ,args) (nth ,i ,args) ,default)) bindings)
               (incf i)))
            ((eq state '&rest)
             (setq rest-var p)
             (push `(,p (nthcdr ,i ,args)) bindings))
            ((eq state '&key)
             (let* ((var (if (consp p) (if (consp (car p)) (car (cdr (car p))) (car p)) p))
                    (key (if (and (consp p) (consp (car p))) (car (car p)) (intern (symbol-name var) "KEYWORD")))
                    (default (if (consp p) (car (cdr p)) nil))
                    (from (or rest-var `(nthcdr ,i ,args))))
               (push `(,var (getf ,from ',key ,default)) bindings)))
            ((eq state '&aux)
             (push (if (consp p) (list (car p) (car (cdr p))) (list p nil)) bindings))))
    (nreverse bindings)))

(defun %combined-method (gf methods spec)
  (let ((definition (%method-combination (car spec))))
    (unless definition
      (error "the generic function ~S uses the method combination ~S, which is not defined ~
              (define it with DEFINE-METHOD-COMBINATION, or name another in its defgeneric)"
             gf (car spec)))
    (multiple-value-bind (form symbols) (funcall (nth 2 definition) gf methods (cdr spec))
     (let ((arguments (nth 3 definition))
           (args (make-symbol "ARGS")))
      (eval `(function
              (lambda (&rest ,args)
                (declare (ignorable ,args))
                (macrolet ((call-method (method &optional next-methods)
                             (%call-method-form method next-methods ',args))
                           (make-method (form)
                             (declare (ignore form))
                             (error "MAKE-METHOD is only meaningful as an argument of CALL-METHOD")))
                  ,(if arguments
                       ;; the symbols the body was given for the :arguments
                       ;; variables are bound to the arguments
                       (let* ((bindings (%em-argument-bindings arguments args))
                              (renames (mapcar #'cons (mapcar #'car bindings) symbols)))
                         `(let* ,(mapcar (lambda (b) (list (cdr (assoc (car b) renames))
                                                           (sublis renames (car (cdr b)))))
                                         bindings)
                            ,form))
                       form)))))))))

;; The short form: primary methods qualified by the combination's name, run
;; as (OPERATOR (call-method m1) (call-method m2) ...), most specific first
;; unless the option says :most-specific-last, inside the :around methods.
(defun %short-combination (name operator identity)
  (lambda (gf methods options)
    (declare (ignore gf))
    (let ((order (if options (car options) :most-specific-first))
          (around '()) (primary '()))
      (unless (and (member order '(:most-specific-first :most-specific-last)) (null (cdr options)))
        (method-combination-error "the ~S method combination takes one option, :most-specific-first or ~
                                   :most-specific-last, not ~S" name options))
      (dolist (m methods)
        (let ((q (method-qualifiers m)))
          (cond ((equal q '(:around)) (push m around))
                ((and (consp q) (eq (car q) name) (null (cdr q))) (push m primary))
                (t (invalid-method-error m "the ~S method combination takes methods qualified ~S or :AROUND, ~
                                            not ~S" name name q)))))
      (setq around (nreverse around))
      (when (eq order :most-specific-first) (setq primary (nreverse primary)))
      (unless primary
        (method-combination-error "no primary method (qualified ~S) is applicable" name))
      (let ((form (if (and identity (null (cdr primary)))
                      `(call-method ,(car primary))
                      `(,operator ,@(mapcar (lambda (m) `(call-method ,m)) primary)))))
        (if around
            `(call-method ,(car around) (,@(cdr around) (make-method ,form)))
            form)))))

;; The long form's method groups: the group of each method, the first whose
;; qualifier patterns or predicate accept its qualifiers.
(defun %qualifier-pattern-match-p (pattern qualifiers)
  (cond ((eq pattern '*) t)
        ((null pattern) (null qualifiers))
        ((atom pattern) nil)
        ((atom qualifiers) nil)
        (t (and (or (eq (car pattern) '*) (equal (car pattern) (car qualifiers)))
                (%qualifier-pattern-match-p (cdr pattern) (cdr qualifiers))))))

(defun %group-methods (methods matchers)
  (let ((groups (make-list (length matchers))))
    (dolist (m methods)
      (let ((q (method-qualifiers m)) (i 0) (placed nil))
        (dolist (match matchers)
          (when (and (not placed) (funcall match q))
            (push m (nth i groups))
            (setq placed t))
          (incf i))
        (unless placed
          (invalid-method-error m "its qualifiers ~S are not in any method group of the combination" q))))
    (mapcar #'nreverse groups)))

(defun %order-group (methods order required name)
  (when (and required (null methods))
    (method-combination-error "no method of the required group ~S is applicable" name))
  (case order
    (:most-specific-first methods)
    (:most-specific-last (reverse methods))
    (t (method-combination-error "the order ~S of the group ~S is not :most-specific-first or ~
                                  :most-specific-last" order name))))

(defun %long-combination-lambda (whole)
  (destructuring-bind (name lambda-list groups &rest body) (cdr whole)
    (let ((arguments nil) (gf-var nil) (doc nil) (gf (gensym "GF")) (ms (gensym "METHODS"))
          (options (gensym "OPTIONS")) (grouped (gensym "GROUPS")))
      (loop
        (cond ((and (consp (car body)) (eq (car (car body)) :arguments))
               (setq arguments (cdr (car body)) body (cdr body)))
              ((and (consp (car body)) (eq (car (car body)) :generic-function))
               (setq gf-var (car (cdr (car body))) body (cdr body)))
              (t (return))))
      (when (and (stringp (car body)) (cdr body))
        (setq doc (car body) body (cdr body)))
      (unless (listp groups) (error "DEFINE-METHOD-COMBINATION ~S: malformed method groups ~S" name groups))
      (let ((matchers '()) (binds '()) (i 0))
        (dolist (g groups)
          (unless (and (consp g) (symbolp (car g)) (consp (cdr g)))
            (error "DEFINE-METHOD-COMBINATION ~S: malformed method group ~S" name g))
          (let* ((var (car g)) (spec (cdr g)) (patterns '()))
            (if (and (symbolp (car spec)) (car spec) (not (eq (car spec) '*)))
                (progn (push `(lambda (q) (,(car spec) q)) matchers) (setq spec (cdr spec)))
                (progn
                  (loop (if (and spec (not (keywordp (car spec))))
                            (progn (push (car spec) patterns) (setq spec (cdr spec)))
                            (return)))
                  (push `(lambda (q) (some (lambda (p) (%qualifier-pattern-match-p p q)) ',(reverse patterns)))
                        matchers)))
            (let ((order (getf spec :order :most-specific-first))
                  (required (getf spec :required nil)))
              (push `(,var (%order-group (nth ,i ,grouped) ,order ,required ',var)) binds))
            (incf i)))
        ;; the :arguments variables are bound, in the body, to symbols that
        ;; the effective method form uses to reach the arguments
        (let ((argument-vars (mapcar #'car (%em-argument-bindings arguments nil))))
          (values
           `(lambda (,gf ,ms ,options)
              (declare (ignorable ,gf))
              (apply (lambda ,lambda-list
                       (let* (,@(if gf-var `((,gf-var ,gf)) nil)
                              ,@(mapcar (lambda (v) `(,v (make-symbol ,(symbol-name v)))) argument-vars)
                              (,grouped (%group-methods ,ms (list ,@(reverse matchers))))
                              ,@(reverse binds))
                         (values (progn ,@body) (list ,@argument-vars))))
                     ,options))
           arguments doc))))))

;; (define-method-combination name [:operator op] [:identity-with-one-argument
;; bool] [:documentation doc]) or (define-method-combination name lambda-list
;; (group...) [(:arguments . ll)] [(:generic-function var)] [doc] form...):
;; the whole form goes to %DEFINE-METHOD-COMBINATION, which makes the
;; combination from it in the null lexical environment and records it.
(defmacro define-method-combination (&whole whole name &rest rest)
  (declare (ignore name rest))
  `(%define-method-combination ',whole))

(defun %define-method-combination (whole)
  (unless (and (consp whole) (consp (cdr whole)) (symbolp (car (cdr whole))) (car (cdr whole))
               (listp (cdr (cdr whole))))
    (error "~S is not a DEFINE-METHOD-COMBINATION form" whole))
  (let ((name (car (cdr whole))) (rest (cdr (cdr whole))))
    (when (member (symbol-package name) (list (find-package "COMMON-LISP") (find-package "JITI")))
      (error 'program-error
             :format-control "the method combination ~S is the language's: define a combination of a name ~
                              of your own"
             :format-arguments (list name)))
    (if (or (null rest) (keywordp (car rest)))
        (let ((operator name) (identity nil) (doc nil))
          (unless (evenp (length rest)) (error "DEFINE-METHOD-COMBINATION ~S: odd number of options" name))
          (loop (when (null rest) (return))
                (case (car rest)
                  (:operator (setq operator (car (cdr rest))))
                  (:identity-with-one-argument (setq identity (car (cdr rest))))
                  (:documentation (setq doc (car (cdr rest))))
                  (t (error "DEFINE-METHOD-COMBINATION ~S: unknown option ~S" name (car rest))))
                (setq rest (cdr (cdr rest))))
          (unless (and (symbolp operator) operator)
            (error "DEFINE-METHOD-COMBINATION ~S: the operator ~S is not a symbol" name operator))
          (%store-method-combination name (list :short doc (%short-combination name operator identity) nil)))
        (multiple-value-bind (lam arguments doc) (%long-combination-lambda whole)
          (%store-method-combination name (list :long doc (%definition-function lam) arguments))))
    (%record-definition :method-combination name whole)
    name))

;; What a defgeneric's (:method-combination name option...) is checked
;; against when the generic function is defined.
(defun %check-method-combination (spec)
  (let ((definition (%method-combination (car spec))))
    (cond ((eq (car spec) 'standard)
           (error 'program-error :format-control "the STANDARD method combination takes no options, not ~S"
                                 :format-arguments (list (cdr spec))))
          ((null definition)
           (error 'program-error
                  :format-control "there is no method combination named ~S (define it with ~
                                   DEFINE-METHOD-COMBINATION before the generic functions that use it)"
                  :format-arguments (list (car spec))))
          ((and (eq (car definition) :short)
                (not (or (null (cdr spec))
                         (and (member (car (cdr spec)) '(:most-specific-first :most-specific-last))
                              (null (cdr (cdr spec)))))))
           (error 'program-error
                  :format-control "the ~S method combination takes one option, :most-specific-first or ~
                                   :most-specific-last, not ~S"
                  :format-arguments (list (car spec) (cdr spec)))))))

(defun %method-combination-documentation (name)
  (nth 1 (%method-combination name)))

(%store-method-combination 'progn (list :short nil (%short-combination 'progn 'progn t) nil))
(%store-method-combination 'and (list :short nil (%short-combination 'and 'and t) nil))
(%store-method-combination 'or (list :short nil (%short-combination 'or 'or t) nil))
(%store-method-combination 'list (list :short nil (%short-combination 'list 'list nil) nil))
(%store-method-combination 'append (list :short nil (%short-combination 'append 'append t) nil))
(%store-method-combination 'nconc (list :short nil (%short-combination 'nconc 'nconc t) nil))
(%store-method-combination '+ (list :short nil (%short-combination '+ '+ t) nil))
(%store-method-combination 'max (list :short nil (%short-combination 'max 'max t) nil))
(%store-method-combination 'min (list :short nil (%short-combination 'min 'min t) nil))
