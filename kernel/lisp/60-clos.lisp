;;;; 60-clos.lisp — the CLOS macros.  defclass, defgeneric and defmethod
;;;; hand the whole form to the kernel (class.c, generic.c), which parses it
;;;; itself; the rest are the standard macros built on slot-value and
;;;; symbol-macrolet.

;; The initforms and default initarg forms that are not constants, each
;; with a closure of it made where the defclass stands: one that closes
;; over a lexical environment is what the class calls (such a class cannot
;; be stored: class.c); at top level they capture nothing and the class
;; makes its own functions from the forms.  A malformed form is left to
;; %defclass, which names the fault.
(defun %defclass-init-forms (slots options)
  (let ((forms nil))
    (flet ((note (f)
             (unless (or (and (symbolp f) (or (null f) (eq f t) (keywordp f)))
                         (and (atom f) (not (symbolp f)))
                         (and (consp f) (eq (car f) 'quote)))
               (push f forms))))
      (when (listp slots)
        (dolist (spec slots)
          (when (and (consp spec) (listp (cdr spec)))
            (do ((o (cdr spec) (cddr o))) ((not (and (consp o) (consp (cdr o)))))
              (when (eq (car o) :initform) (note (cadr o)))))))
      (when (listp options)
        (dolist (opt options)
          (when (and (consp opt) (eq (car opt) :default-initargs))
            (do ((o (cdr opt) (cddr o))) ((not (and (consp o) (consp (cdr o)))))
              (note (cadr o)))))))
    (nreverse forms)))

(defmacro defclass (&whole form name superclasses slots &rest options)
  (declare (ignore name superclasses))
  (let ((inits (%defclass-init-forms slots options)))
    (if inits
        `(%defclass ',form (list ,@(mapcar (lambda (f) `(cons ',f (lambda () ,f))) inits)))
        `(%defclass ',form))))

(defmacro defgeneric (&whole form name lambda-list &rest options)
  (declare (ignore name lambda-list options))
  `(%defgeneric ',form))

;; The x of each (EQL x) specializer that is not a number, character,
;; string, keyword, T or NIL (a literal %defmethod takes as it is), with
;; its value where the defmethod stands: a method using one works, but
;; cannot be stored (generic.c).  A malformed form is left to %defmethod.
(defun %defmethod-eql-forms (rest)
  (let ((forms nil))
    (loop while (and (consp rest) (atom (car rest))) do (setq rest (cdr rest)))
    (when (consp rest)
      (let ((ll (car rest)))
        (loop while (and (consp ll) (not (member (car ll) lambda-list-keywords)))
              do (let ((p (car ll)))
                   (when (and (consp p) (consp (cdr p)) (consp (cadr p)) (eq (car (cadr p)) 'eql)
                              (consp (cdr (cadr p))))
                     (let ((x (cadr (cadr p))))
                       (unless (or (numberp x) (characterp x) (stringp x) (keywordp x) (eq x t) (null x)
                                   (and (consp x) (eq (car x) 'quote) (consp (cdr x))
                                        (let ((q (cadr x)))
                                          (or (numberp q) (characterp q) (stringp q)
                                              (and (symbolp q) (symbol-package q))))))
                         (push x forms)))))
                 (setq ll (cdr ll)))))
    (nreverse forms)))

(defmacro defmethod (&whole form name &rest rest)
  (declare (ignore name))
  (let ((forms (%defmethod-eql-forms rest)))
    (if forms
        `(%defmethod ',form (list ,@(mapcar (lambda (x) `(cons ',x ,x)) forms)))
        `(%defmethod ',form))))

(defmacro with-slots (slots instance &body body)
  (let ((obj (gensym "INSTANCE")))
    `(let ((,obj ,instance))
       (declare (ignorable ,obj))
       (symbol-macrolet ,(mapcar (lambda (s)
                                   (if (consp s)
                                       `(,(car s) (slot-value ,obj ',(car (cdr s))))
                                       `(,s (slot-value ,obj ',s))))
                                 slots)
         ,@body))))

(defmacro with-accessors (accessors instance &body body)
  (let ((obj (gensym "INSTANCE")))
    `(let ((,obj ,instance))
       (declare (ignorable ,obj))
       (symbol-macrolet ,(mapcar (lambda (a) `(,(car a) (,(car (cdr a)) ,obj))) accessors)
         ,@body))))

(defmacro print-unreadable-object ((object stream &key type identity) &body body)
  `(%print-unreadable-object ,object ,stream ,type ,identity
                             ,(if body `(lambda () ,@body) nil)))

;; (describe 'name) says what a symbol names, as the standard's describe
;; does: a variable or constant and its value, a function with its lambda
;; list, a macro or special operator, their documentation, a class.
(defmethod describe-object ((object symbol) stream)
  (call-next-method)
  (when (boundp object)
    (format stream "~%~s names a ~:[special variable~;constant~]:~%  Value: ~s~%"
            object (constantp object) (symbol-value object))
    (let ((doc (documentation object 'variable)))
      (when doc (format stream "  Documentation:~%    ~a~%" doc))))
  (cond ((special-operator-p object)
         (format stream "~%~s names a special operator.~%" object))
        ((macro-function object)
         (format stream "~%~s names a macro.~%" object))
        ((fboundp object)
         (let ((lambda (function-lambda-expression (fdefinition object))))
           (format stream "~%~s names a ~:[built-in~;defined~] function:~%" object lambda)
           (when lambda (format stream "  Lambda-list: ~s~%" (second lambda))))))
  (when (or (macro-function object) (fboundp object))
    (let ((doc (documentation object 'function)))
      (when doc (format stream "  Documentation:~%    ~a~%" doc))))
  (let ((class (find-class object nil)))
    (when class (format stream "~%~s names the class ~s.~%" object class)))
  (values))

;; (ensure-generic-function name &key ...): define or redefine NAME as a
;; generic function, as the DEFGENERIC it amounts to, which is what the
;; world keeps.  Options not given are those of the present definition,
;; and so are its (:method ...) options, whose methods stay.
(defun ensure-generic-function (function-name &key (lambda-list nil lambda-list-p)
                                                   (argument-precedence-order nil apo-p)
                                                   (declare nil declare-p)
                                                   (documentation nil documentation-p)
                                                   (generic-function-class 'standard-generic-function)
                                                   (method-combination nil method-combination-p)
                                                   (method-class 'standard-method)
                                                   environment
                                              &allow-other-keys)
  (declare (ignore environment))
  (flet ((class-named (c) (if (typep c 'class) (class-name c) c)))
    (unless (eq (class-named generic-function-class) 'standard-generic-function)
      (error "ensure-generic-function: the only generic function class is STANDARD-GENERIC-FUNCTION, not ~S"
             generic-function-class))
    (unless (eq (class-named method-class) 'standard-method)
      (error "ensure-generic-function: the only method class is STANDARD-METHOD, not ~S" method-class)))
  (when (and (symbolp function-name) (or (special-operator-p function-name) (macro-function function-name)))
    (error 'program-error :format-control "ensure-generic-function: ~S names a ~:[macro~;special operator~]"
                          :format-arguments (list function-name (special-operator-p function-name))))
  (let* ((old (and (fboundp function-name) (fdefinition function-name)))
         (old-form (and (typep old 'generic-function) (%generic-function-definition old)))
         (old-ll (and (typep old 'generic-function) (nth-value 1 (%generic-function-definition old))))
         (ll (if lambda-list-p lambda-list old-ll))
         (options '()))
    (when (and old (not (typep old 'generic-function)))
      (error 'program-error :format-control "ensure-generic-function: ~S names an ordinary function"
                            :format-arguments (list function-name)))
    (when (and old (not lambda-list-p) (not (or apo-p declare-p documentation-p method-combination-p)))
      (return-from ensure-generic-function old))
    (dolist (o (cdr (cdr (cdr old-form))))
      (unless (or (and apo-p (eq (car o) :argument-precedence-order))
                  (and lambda-list-p (not (equal ll old-ll)) (eq (car o) :argument-precedence-order))
                  (and declare-p (eq (car o) 'declare))
                  (and documentation-p (eq (car o) :documentation))
                  (and method-combination-p (eq (car o) :method-combination)))
        (push o options)))
    (when apo-p (push (cons :argument-precedence-order argument-precedence-order) options))
    (when declare-p (push (cons 'declare declare) options))
    (when (and documentation-p documentation) (push (list :documentation documentation) options))
    (when (and method-combination-p method-combination)
      (push (cons :method-combination (if (listp method-combination) method-combination (list method-combination)))
            options))
    (%defgeneric `(defgeneric ,function-name ,ll ,@(nreverse options)))))

;; A class has one name in a world: the class entry a DEFCLASS made, which
;; its methods and stored instances name.  Setting FIND-CLASS or CLASS-NAME
;; to what it already is does nothing; anything else is refused in a world,
;; and done outside one (jiti run keeps nothing: a name may then be
;; unbound or given another class, and a class renamed, as the standard
;; says).
(defun (setf find-class) (new-value name &optional errorp environment)
  (declare (ignore errorp environment))
  (let ((old (find-class name nil)))
    (cond ((eq new-value old) new-value)
          ((%world-recording-p)
           (error 'program-error
                  :format-control "(setf find-class): a world keeps each class under the name its DEFCLASS gave it ~
                                   (its methods and stored instances name it); ~S cannot be ~:[removed~;given ~
                                   another class~] (define a class of another name, or define ~S again)"
                  :format-arguments (list name new-value name)))
          (t (%bind-class-name name new-value)))))

(defgeneric (setf class-name) (new-value class)
  (:documentation "(setf (class-name class) new-value) Rename CLASS (refused in a world, which keeps each class under the name its DEFCLASS gave it).")
  (:method (new-value class)
    (cond ((eq new-value (class-name class)) new-value)
          ((%world-recording-p)
           (error 'program-error
                  :format-control "(setf class-name): a world keeps each class under the name its DEFCLASS gave it ~
                                   (its methods and stored instances name it); ~S cannot be renamed ~S (define a ~
                                   class of that name instead)"
                  :format-arguments (list class new-value)))
          (t (%rename-class class new-value)))))

;; The functions the standard makes generic, so that a program may
;; specialize them: each one's method on T is the kernel's function (which
;; checks its arguments as before).
(defgeneric class-name (class)
  (:documentation "(class-name class) The name of CLASS.")
  (:method (class) (%class-name class)))

(defgeneric allocate-instance (class &rest initargs &key &allow-other-keys)
  (:documentation "(allocate-instance class &rest initargs) A new instance with every slot unbound.")
  (:method (class &rest initargs) (apply #'%allocate-instance class initargs)))

(defgeneric make-instances-obsolete (class)
  (:documentation "(make-instances-obsolete class) Update CLASS's instances (update-instance-for-redefined-class) at their next use.")
  (:method (class) (%make-instances-obsolete class)))

(defgeneric add-method (generic-function method)
  (:documentation "(add-method gf method) Add METHOD (replacing one with the same specializers); returns GF.")
  (:method (generic-function method) (%add-method generic-function method)))

(defgeneric remove-method (generic-function method)
  (:documentation "(remove-method gf method) Remove METHOD from GF; returns GF.")
  (:method (generic-function method) (%remove-method generic-function method)))

(defgeneric find-method (generic-function qualifiers specializers &optional errorp)
  (:documentation "(find-method gf qualifiers specializers &optional errorp) The method with exactly these qualifiers and specializers.")
  (:method (generic-function qualifiers specializers &optional (errorp t))
    (%find-method generic-function qualifiers specializers errorp)))

(defgeneric compute-applicable-methods (generic-function arguments)
  (:documentation "(compute-applicable-methods gf arguments) The methods that apply, most specific first.")
  (:method (generic-function arguments) (%compute-applicable-methods generic-function arguments)))

(defgeneric method-qualifiers (method)
  (:documentation "(method-qualifiers method) The qualifiers of METHOD.")
  (:method (method) (%method-qualifiers method)))

(defgeneric function-keywords (method)
  (:documentation "(function-keywords method) The keywords of METHOD's &key parameters, and whether it allows other keys.")
  (:method (method) (%function-keywords method)))

;; make-load-form: what a program defines for its own classes; the default
;; methods refuse, as the standard's do.  make-load-form-saving-slots makes
;; the two forms that rebuild an instance or structure from its slots.
(defgeneric make-load-form (object &optional environment)
  (:method ((object standard-object) &optional environment)
    (declare (ignore environment))
    (error "make-load-form: ~S has no load form (define a make-load-form method for its class, e.g. with ~
            make-load-form-saving-slots)" object))
  (:method ((object structure-object) &optional environment)
    (declare (ignore environment))
    (error "make-load-form: ~S has no load form (define a make-load-form method for its structure, e.g. with ~
            make-load-form-saving-slots)" object))
  (:method ((object condition) &optional environment)
    (declare (ignore environment))
    (error "make-load-form: the condition ~S has no load form" object)))

(defun make-load-form-saving-slots (object &key (slot-names nil slot-names-p) environment)
  (declare (ignore environment))
  (let* ((class (class-of object))
         (structure (typep object 'structure-object))
         (names (if slot-names-p
                    slot-names
                    (if structure (%structure-slot-names (class-name class)) (%class-slot-names class)))))
    (values (if structure
                `(copy-structure ',object)
                `(allocate-instance (find-class ',(class-name class))))
            `(progn
               ,@(mapcar (lambda (s)
                           (if (slot-boundp object s)
                               `(setf (slot-value ',object ',s) ',(slot-value object s))
                               `(slot-makunbound ',object ',s)))
                         names)))))
