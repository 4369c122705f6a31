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

(defun %struct-constructor (name cname boa all-names)
  (if boa
      (let ((missing (remove-if (lambda (n) (member n (%lambda-list-vars boa))) all-names)))
        `(defun ,cname ,boa
           (let* ,(mapcar (lambda (n) `(,n (%slot-default ',name ',n))) missing)
             (%make-structure ',name ,@all-names))))
      `(defun ,cname (&key ,@(mapcar (lambda (n) `(,n (%slot-default ',name ',n))) all-names))
         (%make-structure ',name ,@all-names))))

;; (defstruct ...) expands into a call of %DEFSTRUCT with the whole form and
;; the slots' initforms closed over in the definition's lexical environment.
;; %DEFSTRUCT does everything else from the form itself, so calling it
;; directly (it can be found in the expansion) does exactly what writing
;; the DEFSTRUCT would, and what it records is the form it was given.

(defun %struct-slot-specs (whole)
  ;; (name initform-or-nil has-initform) for the :include overrides, then
  ;; the slots, in the order %DEFSTRUCT defines them
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
  `(%defstruct ',whole
               (list ,@(mapcar (lambda (spec)
                                 (if (car (cdr (cdr spec))) `(lambda () ,(car (cdr spec))) nil))
                               (%struct-slot-specs whole)))))

(defun %defstruct (whole initform-thunks)
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
         (value-var (gensym "VALUE")) (obj (gensym "OBJ")))
    (unless (and name (symbolp name)) (error "DEFSTRUCT: ~S is not a structure name" name))
    (unless (and (listp initform-thunks) (= (length initform-thunks) (length specs))
                 (every (lambda (f) (or (null f) (functionp f))) initform-thunks))
      (error "DEFSTRUCT ~S: one initform function or NIL per slot is wanted" name))
    (%define-structure name include
                       (mapcar (lambda (spec thunk) (list (car spec) nil thunk)) specs initform-thunks))
    (let ((%defining-type name) (i -1))
      (dolist (sname all-names)
        (setq i (1+ i))
        (let ((acc (%symbolicate conc-name sname)))
          (eval `(defun ,acc (,obj) (%struct-ref ,obj ',name ,i)))
          (eval `(defun (setf ,acc) (,value-var ,obj) (%struct-set ,obj ',name ,i ,value-var)))))
      (dolist (c (%struct-constructors name constructors))
        (eval (%struct-constructor name (car c) (cdr c) all-names)))
      (unless (and pred-opt (cdr pred-opt) (null (car (cdr pred-opt))))
        (eval `(defun ,predicate (x) (%struct-typep x ',name))))
      (unless (and copier-opt (cdr copier-opt) (null (car (cdr copier-opt))))
        (eval `(defun ,copier (x) (copy-structure x)))))
    (%record-type name whole)
    name))
