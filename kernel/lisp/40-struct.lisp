;;;; 40-struct.lisp — defstruct, on top of the layout primitives (struct.c).

(defun %struct-option (options name)
  (dolist (o options nil)
    (cond ((eq o name) (return (list name)))
          ((and (consp o) (eq (car o) name)) (return o)))))

(defun %symbolicate (&rest parts)
  (intern (apply #'concatenate 'string
                 (mapcar (lambda (p) (if (symbolp p) (symbol-name p) p)) parts))))

(defun %struct-constructors (name options)
  ;; a list of (constructor-name boa-p boa-lambda-list): the default
  ;; keyword constructor unless a :constructor option is given; (:constructor
  ;; nil) makes none, (:constructor name ()) a BOA constructor of no arguments
  (if (null options)
      (list (list (%symbolicate "MAKE-" name) nil nil))
      (mapcan (lambda (o)
                (cond ((null (cdr o)) (list (list (%symbolicate "MAKE-" name) nil nil)))
                      ((null (car (cdr o))) nil)
                      ((not (symbolp (car (cdr o))))
                       (error "DEFSTRUCT ~S: ~S is not a constructor name" name (car (cdr o))))
                      ((cdr (cdr o)) (list (list (car (cdr o)) t (car (cdr (cdr o))))))
                      (t (list (list (car (cdr o)) nil nil)))))
              options)))

(defun %struct-slot-named (var slots)
  ;; the slot description VAR names (slot names compare by their names)
  (find (symbol-name var) slots :key (lambda (s) (symbol-name (car s))) :test #'string=))

(defun %struct-boa-lambda-list (name ll slots)
  ;; a BOA lambda list with the slots' initforms as the defaults of the
  ;; &optional and &key parameters given none (CLHS 3.4.6), and the
  ;; variables it binds
  (let ((mode nil) (out nil) (vars nil))
    (dolist (p ll)
      (cond ((member p '(&optional &rest &key &aux &allow-other-keys))
             (setq mode p) (push p out))
            ((and (member mode '(&optional &key)) (or (symbolp p) (and (consp p) (null (cdr p)))))
             (let* ((var (if (consp p) (car p) p))
                    (v (if (consp var) (car (cdr var)) var))
                    (slot (%struct-slot-named v slots)))
               (push v vars)
               (push (if (and slot (car (cdr (cdr slot))))
                         (list var `(%slot-default ',name ',(car slot)))
                         (list var))
                     out)))
            (t (let ((var (if (consp p) (car p) p)))
                 (push (if (consp var) (car (cdr var)) var) vars)
                 (push p out)))))
    (values (nreverse out) vars)))

(defun %struct-constructor (name cname boa-p boa slots make)
  ;; a function form for the constructor CNAME; MAKE builds the object from
  ;; a form per slot.  A keyword constructor binds gensyms, so that a slot
  ;; named by a keyword, a constant or a special variable works.
  (if boa-p
      (multiple-value-bind (ll vars) (%struct-boa-lambda-list name boa slots)
        (let ((forms (mapcar (lambda (s)
                               (let ((v (find (symbol-name (car s)) vars :key #'symbol-name :test #'string=)))
                                 (cond (v v)
                                       ((car (cdr (cdr s))) `(%slot-default ',name ',(car s)))
                                       (t nil))))
                             slots)))
          `(function (named-lambda ,cname ,ll ,(funcall make forms)))))
      (let ((vars (mapcar (lambda (s) (declare (ignore s)) (gensym "SLOT")) slots)))
        `(function (named-lambda ,cname
                       (&key ,@(mapcar (lambda (s v)
                                         `((,(intern (symbol-name (car s)) (symbol-package :key)) ,v)
                                           ,(if (car (cdr (cdr s))) `(%slot-default ',name ',(car s)) nil)))
                                       slots vars))
                     ,(funcall make vars))))))

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
;;
;; A structure's description, kept in its layout (%structure-info), is a
;; property list: :slots, a list of (name index accessor read-only
;; has-initform) in slot order (inherited slots first; INDEX is the slot's
;; place in the instance, or in the list or vector of a :type structure),
;; and for a :type structure :seq (LIST or VECTOR), :element-type, :length
;; and :tags, the (index . name) places of the :named names, included
;; structures' first.

(defun %struct-parse-slot (s name)
  ;; (name initform has-initform read-only type-given read-only-given)
  (cond ((symbolp s) (list s nil nil nil nil nil))
        ((and (consp s) (symbolp (car s)) (listp (cdr s)))
         (let ((opts (cdr (cdr s))))
           (unless (evenp (length opts))
             (error "DEFSTRUCT ~S: odd slot options in ~S" name s))
           (do ((o opts (cdr (cdr o)))) ((null o))
             (unless (member (car o) '(:type :read-only))
               (error "DEFSTRUCT ~S: unknown slot option ~S in ~S" name (car o) s)))
           (list (car s) (car (cdr s)) (consp (cdr s))
                 (if (getf opts :read-only) t nil) (not (null (member :type opts)))
                 (not (null (member :read-only opts))))))
        (t (error "DEFSTRUCT ~S: bad slot description ~S" name s))))

(defun %struct-slot-specs (whole)
  ;; (name initform has-initform read-only ...) for the :include overrides,
  ;; then the slots, in the order %DEFSTRUCT defines them
  (let* ((name-and-options (car (cdr whole)))
         (name (if (consp name-and-options) (car name-and-options) name-and-options))
         (options (if (consp name-and-options) (cdr name-and-options) nil))
         (include-opt (%struct-option options :include))
         (slot-descriptions (cdr (cdr whole))))
    (mapcar (lambda (s) (%struct-parse-slot s name))
            (append (cdr (cdr include-opt))
                    (if (stringp (car slot-descriptions))
                        (cdr slot-descriptions)
                        slot-descriptions)))))

(defmacro defstruct (&whole whole name-and-options &rest slot-descriptions)
  (declare (ignore name-and-options slot-descriptions))
  `(%defstruct ',whole))

(defun %struct-seq-type (name type-opt)
  ;; (values LIST-or-VECTOR element-type) of a :type option, or NIL
  (let ((ty (car (cdr type-opt))))
    (cond ((null type-opt) (values nil t))
          ((eq ty 'list) (values 'list t))
          ((eq ty 'vector) (values 'vector t))
          ((and (consp ty) (eq (car ty) 'vector) (consp (cdr ty)) (null (cdr (cdr ty))))
           (values 'vector (upgraded-array-element-type (car (cdr ty)))))
          (t (error "DEFSTRUCT ~S: bad :TYPE option ~S" name type-opt)))))

(defun %defstruct (whole)
  (unless (and (consp whole) (eq (car whole) 'defstruct) (consp (cdr whole)) (listp (cdr (cdr whole))))
    (error "~S is not a DEFSTRUCT form" whole))
  (let* ((name-and-options (car (cdr whole)))
         (name (if (consp name-and-options) (car name-and-options) name-and-options))
         (options (if (consp name-and-options) (cdr name-and-options) nil)))
    (unless (and name (symbolp name)) (error "DEFSTRUCT: ~S is not a structure name" name))
    (dolist (o options)
      (unless (member (if (consp o) (car o) o)
                      '(:conc-name :constructor :copier :predicate :include :print-object
                        :print-function :type :named :initial-offset))
        (error "DEFSTRUCT ~S: unknown option ~S" name o)))
    (let* ((specs (%struct-slot-specs whole))
           (conc (%struct-option options :conc-name))
           ;; NIL: the accessors are named by the slots themselves
           (conc-name (cond ((null conc) (concatenate 'string (symbol-name name) "-"))
                            ((null (cdr conc)) nil)
                            ((null (car (cdr conc))) nil)
                            (t (string (car (cdr conc))))))
           (include-opt (%struct-option options :include))
           (include (car (cdr include-opt)))
           (n-overrides (length (cdr (cdr include-opt))))
           (parent-info (if include (%structure-info include) nil))
           (parent-slots (getf parent-info :slots))
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
           (type-opt (%struct-option options :type))
           (value-var (gensym "VALUE")) (obj (gensym "OBJ")))
      (multiple-value-bind (seq-type element-type) (%struct-seq-type name type-opt)
        (let* ((named (and seq-type (%struct-option options :named) t))
               (offset (if seq-type (or (car (cdr (%struct-option options :initial-offset))) 0) 0))
               (parent-length (if include (getf parent-info :length 0) 0))
               (tags (append (getf parent-info :tags)
                             (if named (list (cons (+ parent-length offset) name)) nil)))
               (first-own (+ parent-length offset (if named 1 0)))
               (overrides (subseq specs 0 n-overrides))
               (own (nthcdr n-overrides specs))
               ;; (name initform has-initform read-only index accessor)
               (slots nil))
          (when include
            (unless (and (symbolp include) (%structure-info include))
              (error "DEFSTRUCT ~S: ~S is not a structure to include" name include))
            (unless (eq (getf parent-info :seq) seq-type)
              (error "DEFSTRUCT ~S: the included structure ~S must have the same :TYPE" name include))
            (dolist (o overrides)
              (let ((p (%struct-slot-named (car o) parent-slots)))
                (unless p (error "DEFSTRUCT ~S: ~S is no slot of the included structure ~S" name (car o) include))
                (when (and (car (cdr (cdr (cdr p)))) (car (cdr (cdr (cdr (cdr (cdr o))))))
                           (not (car (cdr (cdr (cdr o))))))
                  (error "DEFSTRUCT ~S: the slot ~S is read-only in ~S" name (car o) include)))))
          (when (and seq-type (not named) pred-opt (cdr pred-opt) (car (cdr pred-opt)))
            (error "DEFSTRUCT ~S: an unnamed :TYPE structure has no predicate" name))
          (when (and named (consp (car (cdr type-opt))) (not (subtypep 'symbol (car (cdr (car (cdr type-opt)))))))
            (error "DEFSTRUCT ~S: a ~S cannot hold the structure's name (:NAMED)" name (car (cdr type-opt))))
          (when (and (not seq-type) (or (%struct-option options :named) (%struct-option options :initial-offset)))
            (error "DEFSTRUCT ~S: :NAMED and :INITIAL-OFFSET need a :TYPE option" name))
          (unless (and (integerp offset) (>= offset 0))
            (error "DEFSTRUCT ~S: bad :INITIAL-OFFSET ~S" name offset))
          ;; the inherited slots (given again: with the override's initform
          ;; and read-only), then the own ones
          (let ((i -1))
            (dolist (p parent-slots)
              (let ((o (find (symbol-name (car p)) overrides :key (lambda (o) (symbol-name (car o))) :test #'string=)))
                (push (list (car p) (if o (car (cdr o)) nil) (if o (car (cdr (cdr o))) (car (cdr (cdr (cdr (cdr p))))))
                            (if (and o (car (cdr (cdr (cdr (cdr (cdr o))))))) (car (cdr (cdr (cdr o)))) (car (cdr (cdr (cdr p)))))
                            (if seq-type (car (cdr p)) (setq i (1+ i))))
                      slots)))
            (let ((k first-own))
              (dolist (s own)
                (when (find (symbol-name (car s)) slots :key (lambda (x) (symbol-name (car x))) :test #'string=)
                  (error "DEFSTRUCT ~S: two slots named ~A" name (symbol-name (car s))))
                (push (list (car s) (car (cdr s)) (car (cdr (cdr s))) (car (cdr (cdr (cdr s))))
                            (if seq-type (prog1 k (setq k (1+ k))) (setq i (1+ i))))
                      slots))))
          (setq slots (nreverse slots))
          (let* ((length (+ first-own (length own)))
                 (make (if seq-type
                           (lambda (slot-forms)
                             (let ((elts (make-list length)))
                               (dolist (tg tags) (setf (nth (car tg) elts) `',(cdr tg)))
                               (mapc (lambda (s f) (setf (nth (car (cdr (cdr (cdr (cdr s))))) elts) f)) slots slot-forms)
                               (cond ((eq seq-type 'list) `(list ,@elts))
                                     ((eq element-type t) `(vector ,@elts))
                                     (t `(make-array ,length :element-type ',element-type
                                                             :initial-contents (list ,@elts))))))
                           (lambda (slot-forms) `(%make-structure ',name ,@slot-forms))))
                 (accessors (mapcar (lambda (s) (if conc-name (%symbolicate conc-name (car s)) (car s))) slots))
                 ;; an included slot whose accessor has the parent's name keeps the parent's
                 (own-accessors (mapcar (lambda (s a)
                                          (let ((p (%struct-slot-named (car s) parent-slots)))
                                            (if (and p (eq (car (cdr (cdr p))) a)) nil a)))
                                        slots accessors))
                 (info (list :slots (mapcar (lambda (s a)
                                              (list (car s) (car (cdr (cdr (cdr (cdr s))))) a
                                                    (car (cdr (cdr (cdr s)))) (car (cdr (cdr s)))))
                                            slots accessors)
                             :seq seq-type :element-type element-type :length length :tags tags))
                 ;; the user's code, made into functions while definitions are recorded
                 (thunks (mapcar (lambda (spec) (if (car (cdr (cdr spec))) (eval `(lambda () ,(car (cdr spec)))) nil))
                                 specs))
                 (ctors (mapcar (lambda (c)
                                  (cons (car c) (eval (%struct-constructor name (car c) (car (cdr c)) (car (cdr (cdr c)))
                                                                           slots make))))
                                (%struct-constructors name constructors)))
                 (printer (if seq-type nil (%struct-printer options)))
                 (has-predicate (and (or named (not seq-type))
                                     (not (and pred-opt (cdr pred-opt) (null (car (cdr pred-opt)))))))
                 (has-copier (not (and copier-opt (cdr copier-opt) (null (car (cdr copier-opt))))))
                 (writable (remove nil (mapcar (lambda (s a) (if (car (cdr (cdr (cdr s)))) nil a)) slots own-accessors))))
            (%define-structure name include
                               (mapcar (lambda (spec thunk) (list (car spec) nil thunk)) specs thunks)
                               printer info)
            (let ((%defining-type (append (remove nil own-accessors)
                                          (mapcar (lambda (a) (list 'setf a)) writable)
                                          (mapcar #'car ctors)
                                          (if has-predicate (list predicate) nil)
                                          (if has-copier (list copier) nil))))
              (mapc (lambda (s acc)
                      (when acc
                        (let* ((i (car (cdr (cdr (cdr (cdr s))))))
                               (place (cond ((eq seq-type 'list) `(nth ,i ,obj))
                                            (seq-type `(aref ,obj ,i))
                                            (t nil))))
                          (eval (if place
                                    `(defun ,acc (,obj) ,place)
                                    `(defun ,acc (,obj) (%struct-ref ,obj ',name ,i))))
                          (unless (car (cdr (cdr (cdr s))))
                            (eval (if place
                                      `(defun (setf ,acc) (,value-var ,obj) (setf ,place ,value-var))
                                      `(defun (setf ,acc) (,value-var ,obj) (%struct-set ,obj ',name ,i ,value-var))))))))
                    slots own-accessors)
              (dolist (c ctors) (setf (fdefinition (car c)) (cdr c)))
              (when has-predicate
                (let ((at (car (car (last tags)))))
                  (eval (cond ((eq seq-type 'list)
                               `(defun ,predicate (x)
                                  (and (listp x) (ignore-errors (> (list-length x) ,at)) (eq (nth ,at x) ',name))))
                              (seq-type
                               `(defun ,predicate (x)
                                  (and (vectorp x) (> (length x) ,at) (eq (aref x ,at) ',name))))
                              (t `(defun ,predicate (x) (%struct-typep x ',name)))))))
              (when has-copier
                (eval `(defun ,copier (x) ,(cond ((eq seq-type 'list) '(copy-list x))
                                                 (seq-type '(copy-seq x))
                                                 (t '(copy-structure x))))))))))
      (%record-type name whole)
      name)))
