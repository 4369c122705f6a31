;;;; 40-struct.lisp — defstruct, on top of the layout primitives (struct.c).

(defun %struct-option (options name)
  (dolist (o options nil)
    (cond ((eq o name) (return (list name)))
          ((and (consp o) (eq (car o) name)) (return o)))))

(defun %symbolicate (&rest parts)
  (intern (apply #'concatenate 'string
                 (mapcar (lambda (p) (if (symbolp p) (symbol-name p) p)) parts))))

(defun %struct-constructors (name options)
  ;; list of (constructor-name . boa-arglist-or-nil)
  (cond ((null options) (list (list (%symbolicate "MAKE-" name))))
        (t (mapcan (lambda (o)
                     (cond ((null (cdr o)) (list (list (%symbolicate "MAKE-" name))))
                           ((null (car (cdr o))) nil)
                           ((cdr (cdr o)) (list (cons (car (cdr o)) (car (cdr (cdr o))))))
                           (t (list (list (car (cdr o)))))))
                   options))))

(defun %lambda-list-vars (ll)
  (mapcan (lambda (p)
            (cond ((member p '(&optional &rest &key &aux &body &allow-other-keys)) nil)
                  ((consp p) (list (if (consp (car p)) (car (cdr (car p))) (car p))))
                  (t (list p))))
          ll))

(defun %struct-constructor (name cname boa all-names make)
  ;; a function form for the constructor CNAME; MAKE builds the object
  ;; from a form per slot
  (if boa
      (let ((missing (remove-if (lambda (n) (member n (%lambda-list-vars boa))) all-names)))
        `(function (named-lambda ,cname ,boa
                     (let* ,(mapcar (lambda (n) `(,n (%slot-default ',name ',n))) missing)
                       ,(funcall make all-names)))))
      `(function (named-lambda ,cname (&key ,@(mapcar (lambda (n) `(,n (%slot-default ',name ',n))) all-names))
                   ,(funcall make all-names)))))

(defun %struct-printer (options)
  ;; the function of (object stream) the :print-function or :print-object
  ;; option names, or NIL.  A symbol is called through its name, so the
  ;; function may be defined after the structure.
  (let* ((pf (%struct-option options :print-function))
         (po (%struct-option options :print-object))
         (opt (or pf po))
         (f (car (cdr opt)))
         (extra (if pf '(0) nil)))
    (cond ((null f) nil)
          ((symbolp f) (eval `(lambda (o s) (funcall ',f o s ,@extra))))
          (t (eval `(let ((f (function ,f))) (lambda (o s) (funcall f o s ,@extra))))))))

;; (defstruct ...) expands into a call of %DEFSTRUCT with the whole form,
;; which does everything from the form itself: calling it directly (it can
;; be found in the expansion) does exactly what writing the DEFSTRUCT would,
;; and what it records is the form it was given.  Initforms and BOA
;; defaults are evaluated in the null lexical environment, as for a
;; top-level DEFSTRUCT.
;;
;; The functions the type defines (accessors, constructors, predicate,
;; copier) belong to the type's entry, not to entries of their own: they are
;; installed while %DEFINING-TYPE holds their names, which the world layer
;; reads.  Only the kernel's own code runs then: anything of the user's
;; (initforms, BOA defaults, and any macro they use) is turned into a
;; function before, while every definition is recorded as usual.

(defun %struct-slot-specs (whole)
  ;; (name initform has-initform) for the :include overrides, then the
  ;; slots, in the order %DEFSTRUCT defines them
  (let* ((name-and-options (car (cdr whole)))
         (options (if (consp name-and-options) (cdr name-and-options) nil))
         (include-opt (%struct-option options :include))
         (slot-descriptions (cdr (cdr whole))))
    (mapcar (lambda (s)
              (cond ((consp s)
                     (unless (symbolp (car s)) (error "DEFSTRUCT: bad slot description ~S" s))
                     (list (car s) (car (cdr s)) (consp (cdr s))))
                    ((symbolp s) (list s nil nil))
                    (t (error "DEFSTRUCT: bad slot description ~S" s))))
            (append (cdr (cdr include-opt))
                    (if (stringp (car slot-descriptions))
                        (cdr slot-descriptions)
                        slot-descriptions)))))

(defmacro defstruct (&whole whole name-and-options &rest slot-descriptions)
  (declare (ignore name-and-options slot-descriptions))
  `(%defstruct ',whole))

(defun %defstruct (whole)
  (unless (and (consp whole) (eq (car whole) 'defstruct) (consp (cdr whole)) (listp (cdr (cdr whole))))
    (error "~S is not a DEFSTRUCT form" whole))
  (let* ((name-and-options (car (cdr whole)))
         (name (if (consp name-and-options) (car name-and-options) name-and-options))
         (options (if (consp name-and-options) (cdr name-and-options) nil))
         (specs (%struct-slot-specs whole))
         (conc (%struct-option options :conc-name))
         (conc-name (cond ((null conc) (concatenate 'string (symbol-name name) "-"))
                          ((null (cdr conc)) "")
                          ((null (car (cdr conc))) "")
                          (t (string (car (cdr conc))))))
         (include-opt (%struct-option options :include))
         (include (car (cdr include-opt)))
         (include-overrides (mapcar #'car (cdr (cdr include-opt))))
         (constructors (remove-if-not (lambda (o) (and (consp o) (eq (car o) :constructor)))
                                      options))
         (pred-opt (%struct-option options :predicate))
         (predicate (if (and pred-opt (cdr pred-opt))
                        (car (cdr pred-opt))
                        (%symbolicate name "-P")))
         (copier-opt (%struct-option options :copier))
         (copier (if (and copier-opt (cdr copier-opt))
                     (car (cdr copier-opt))
                     (%symbolicate "COPY-" name)))
         (inherited (if include (%structure-slot-names include) nil))
         (own (nthcdr (length include-overrides) specs))
         (all-names (append inherited
                            (remove-if (lambda (n) (member n inherited))
                                       (mapcar #'car own))))
         (value-var (gensym "VALUE")) (obj (gensym "OBJ"))
         ;; (:type list|vector): the structure is a list or vector whose
         ;; slots follow :initial-offset NILs and, when :named, the name
         (type-opt (%struct-option options :type))
         (seq-type (cond ((null type-opt) nil)
                         ((eq (car (cdr type-opt)) 'list) 'list)
                         ((or (eq (car (cdr type-opt)) 'vector)
                              (and (consp (car (cdr type-opt))) (eq (car (car (cdr type-opt))) 'vector)))
                          'vector)
                         (t (error "DEFSTRUCT: bad :TYPE option ~S" type-opt))))
         (named (and seq-type (%struct-option options :named)))
         (offset (if seq-type (or (car (cdr (%struct-option options :initial-offset))) 0) 0))
         (first-slot (+ offset (if named 1 0)))
         (make (if seq-type
                   (lambda (slot-forms)
                     `(,seq-type ,@(make-list offset) ,@(if named `(',name) nil) ,@slot-forms))
                   (lambda (slot-forms) `(%make-structure ',name ,@slot-forms)))))
    (unless (and name (symbolp name)) (error "DEFSTRUCT: ~S is not a structure name" name))
    ;; the user's code, made into functions while definitions are recorded
    (let* ((thunks (mapcar (lambda (spec) (if (car (cdr (cdr spec))) (eval `(lambda () ,(car (cdr spec)))) nil))
                           specs))
           (ctors (mapcar (lambda (c) (cons (car c) (eval (%struct-constructor name (car c) (cdr c) all-names make))))
                          (%struct-constructors name constructors)))
           (printer (if seq-type nil (%struct-printer options)))
           (accessors (mapcar (lambda (sname) (%symbolicate conc-name sname)) all-names))
           (has-predicate (and (or named (not seq-type))
                               (not (and pred-opt (cdr pred-opt) (null (car (cdr pred-opt)))))))
           (has-copier (not (and copier-opt (cdr copier-opt) (null (car (cdr copier-opt)))))))
      (%define-structure name include
                         (mapcar (lambda (spec thunk) (list (car spec) nil thunk)) specs thunks)
                         printer)
      (let ((%defining-type (append accessors (mapcar (lambda (a) (list 'setf a)) accessors)
                                    (mapcar #'car ctors)
                                    (if has-predicate (list predicate) nil)
                                    (if has-copier (list copier) nil)))
            (i -1))
        (dolist (acc accessors)
          (setq i (1+ i))
          (if seq-type
              (let ((place `(elt ,obj ,(+ first-slot i))))
                (eval `(defun ,acc (,obj) ,place))
                (eval `(defun (setf ,acc) (,value-var ,obj) (setf ,place ,value-var))))
              (progn
                (eval `(defun ,acc (,obj) (%struct-ref ,obj ',name ,i)))
                (eval `(defun (setf ,acc) (,value-var ,obj) (%struct-set ,obj ',name ,i ,value-var))))))
        (dolist (c ctors) (setf (fdefinition (car c)) (cdr c)))
        (when has-predicate
          (eval (if seq-type
                    `(defun ,predicate (x)
                       (and (typep x ',seq-type) (> (length x) ,offset) (eq (elt x ,offset) ',name)))
                    `(defun ,predicate (x) (%struct-typep x ',name)))))
        (when has-copier
          (eval `(defun ,copier (x) ,(if seq-type '(copy-seq x) '(copy-structure x)))))))
    (%record-type name whole)
    name))
