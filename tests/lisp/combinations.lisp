;;;; combinations.lisp -- method combinations (built-in, short and long
;;;; define-method-combination), :argument-precedence-order,
;;;; ensure-generic-function, make-instances-obsolete, make-load-form.

(suite "combinations")

(defvar *trace* nil)

;;; the built-in combinations: most specific first unless told otherwise
(defgeneric mc-plus (x) (:method-combination +)
  (:method + ((x integer)) 8) (:method + ((x rational)) 4) (:method + ((x t)) 1))
(is-equal (list (mc-plus 1) (mc-plus 1/2) (mc-plus 'a)) '(13 5 1))

(defgeneric mc-list (x) (:method-combination list :most-specific-last)
  (:method list ((x integer)) 'integer) (:method list ((x number)) 'number) (:method list ((x t)) 't))
(is-equal (mc-list 1) '(t number integer))
(is-equal (mc-list "s") '(t))

(defgeneric mc-progn (x) (:method-combination progn)
  (:method progn ((x integer)) (push 'integer *trace*) 'i)
  (:method progn ((x t)) (push 't *trace*) 'last))
(is-equal (let ((*trace* nil)) (list (mc-progn 1) *trace*)) '(last (t integer)))

(defgeneric mc-and (x) (:method-combination and)
  (:method and ((x integer)) (push 'integer *trace*) nil)
  (:method and ((x t)) (push 't *trace*) t))
(is-equal (let ((*trace* nil)) (list (mc-and 1) *trace*)) '(nil (integer)))
(is-eql (mc-and 'a) t)

(defgeneric mc-or (x) (:method-combination or)
  (:method or ((x integer)) nil) (:method or ((x t)) 'found))
(is-eql (mc-or 1) 'found)

(defgeneric mc-append (x) (:method-combination append)
  (:method append ((x integer)) (list 'i)) (:method append ((x t)) (list 't)))
(is-equal (mc-append 1) '(i t))

(defgeneric mc-nconc (x) (:method-combination nconc)
  (:method nconc ((x integer)) (list 'i)) (:method nconc ((x t)) (list 't)))
(is-equal (mc-nconc 1) '(i t))

(defgeneric mc-max (x) (:method-combination max)
  (:method max ((x integer)) 3) (:method max ((x t)) 7))
(defgeneric mc-min (x) (:method-combination min)
  (:method min ((x integer)) 3) (:method min ((x t)) 7))
(is-equal (list (mc-max 1) (mc-min 1) (mc-max 'a)) '(7 3 7))

;;; :around methods wrap the combination; call-next-method reaches it
(defgeneric mc-around (x) (:method-combination +)
  (:method + ((x integer)) 1)
  (:method + ((x t)) 10)
  (:method :around ((x integer)) (list 'around (call-next-method) (next-method-p))))
(is-equal (mc-around 1) '(around 11 t))
(is-eql (mc-around 'a) 10)

;;; errors: a method without the combination's qualifier, no primary
;;; method, no applicable method, an unknown option
(defgeneric mc-bad (x) (:method-combination +)
  (:method ((x integer)) 1) (:method + ((x t)) 2))
(signals error (mc-bad 1))
(is-eql (mc-bad 'a) 2)
(defgeneric mc-around-only (x) (:method-combination +)
  (:method :around ((x t)) 1) (:method + ((x integer)) 2))
(signals error (mc-around-only 'a))
(defgeneric mc-none (x) (:method-combination list) (:method list ((x integer)) 1))
(signals error (mc-none 'a))
(signals error (eval '(defgeneric mc-bad-order (x) (:method-combination list :sideways))))

;;; the standard combination judges qualifiers when it runs
(defgeneric mc-std (x))
(defmethod mc-std :sideways ((x t)) 1)
(signals error (mc-std 1))

;;; the short form of define-method-combination
(define-method-combination mc-times :operator * :identity-with-one-argument t
  :documentation "Multiply.")
(defgeneric mc-product (x) (:method-combination mc-times)
  (:method mc-times ((x integer)) 2) (:method mc-times ((x real)) 3) (:method mc-times ((x t)) 5))
(is-equal (list (mc-product 1) (mc-product 1.5) (mc-product 'a)) '(30 15 5))
(is-equal (documentation 'mc-times 'method-combination) "Multiply.")
(signals error (eval '(defgeneric mc-undefined (x) (:method-combination no-such-combination)
                       (:method no-such-combination ((x t)) 1))) )

;;; the long form: groups by qualifier pattern, :order, :required,
;;; options, :arguments, :generic-function, make-method
(define-method-combination mc-groups (&optional (order :most-specific-first))
  ((around (:around))
   (before (:before))
   (primary () :order order :required t)
   (after (:after) :order :most-specific-last))
  "Befores, primaries (all of them, into a list), afters, inside the arounds."
  (let ((form `(multiple-value-prog1
                   (progn ,@(mapcar (lambda (m) `(call-method ,m)) before)
                          (list ,@(mapcar (lambda (m) `(call-method ,m)) primary)))
                 ,@(mapcar (lambda (m) `(call-method ,m)) after))))
    (if around
        `(call-method ,(first around) (,@(rest around) (make-method ,form)))
        form)))

(defgeneric mc-grouped (x) (:method-combination mc-groups)
  (:method ((x integer)) 'integer)
  (:method ((x t)) 't)
  (:method :before ((x t)) (push 'before *trace*))
  (:method :after ((x t)) (push 'after *trace*))
  (:method :around ((x number)) (cons 'around (call-next-method))))
(is-equal (let ((*trace* nil)) (list (mc-grouped 1) *trace*)) '((around integer t) (after before)))
(is-equal (let ((*trace* nil)) (list (mc-grouped 'a) *trace*)) '((t) (after before)))

(defgeneric mc-grouped-last (x) (:method-combination mc-groups :most-specific-last)
  (:method ((x integer)) 'integer) (:method ((x t)) 't))
(is-equal (mc-grouped-last 1) '(t integer))

(defgeneric mc-grouped-required (x) (:method-combination mc-groups)
  (:method :before ((x t)) nil))
(signals error (mc-grouped-required 1))

(defgeneric mc-grouped-invalid (x) (:method-combination mc-groups)
  (:method ((x t)) 1) (:method :sideways ((x t)) 2))
(signals error (mc-grouped-invalid 1))

(define-method-combination mc-predicate ()
  ((odd mc-odd-qualifier-p) (rest *))
  (:arguments object)
  (:generic-function gf)
  `(list ',(if (typep gf 'generic-function) 'gf 'not-gf) ,object
         ,@(mapcar (lambda (m) `(call-method ,m)) odd) :rest ,(length rest)))
(defun mc-odd-qualifier-p (qualifiers) (and (integerp (first qualifiers)) (oddp (first qualifiers))))
(defgeneric mc-pred (x) (:method-combination mc-predicate)
  (:method 1 ((x integer)) 'one) (:method 2 ((x t)) 'two) (:method 3 ((x t)) 'three))
(is-equal (mc-pred 5) '(gf 5 one three :rest 1))

;;; :argument-precedence-order: the arguments compared right to left
(defgeneric mc-apo (a b) (:argument-precedence-order b a)
  (:method ((a integer) (b t)) 'a-integer)
  (:method ((a t) (b integer)) 'b-integer))
(is-eql (mc-apo 1 1) 'b-integer)
(signals error (eval '(defgeneric mc-apo-bad (a b) (:argument-precedence-order a))))
(signals error (eval '(defgeneric mc-apo-bad (a b) (:argument-precedence-order a a))))

;;; ensure-generic-function: a generic function, its methods kept
(defgeneric mc-egf (x y)
  (:method ((x t) (y symbol)) 1)
  (:method ((x symbol) (y t)) 2))
(is-equal (mapcar #'mc-egf '(a a 3) '(b 4 b)) '(2 2 1))
(is (eq (fdefinition 'mc-egf)
        (ensure-generic-function 'mc-egf :lambda-list '(x y) :argument-precedence-order '(y x))))
(is-equal (mapcar #'mc-egf '(a a 3) '(b 4 b)) '(1 2 1))
(is (typep (ensure-generic-function 'mc-egf-fresh :lambda-list '(a)) 'generic-function))
(is (typep (fdefinition 'mc-egf-fresh) 'generic-function))
(signals error (ensure-generic-function 'car))
(signals error (ensure-generic-function 'defclass))
(signals error (ensure-generic-function 'tagbody))

;;; make-instances-obsolete: the next use updates the instance
(defclass mc-obsolete () ((a :initarg :a)))
(defvar *mc-updates* 0)
(defmethod update-instance-for-redefined-class :after ((i mc-obsolete) added discarded plist &rest initargs)
  (declare (ignore added discarded plist initargs))
  (incf *mc-updates*))
(let ((o (make-instance 'mc-obsolete :a 1)))
  (is-eql (make-instances-obsolete 'mc-obsolete) 'mc-obsolete)
  (is-eql (slot-value o 'a) 1)
  (is-eql *mc-updates* 1)
  (is-eql (slot-value o 'a) 1)
  (is-eql *mc-updates* 1))

;;; (setf find-class) to the class the name has
(is (eq (setf (find-class 'mc-obsolete) (find-class 'mc-obsolete)) (find-class 'mc-obsolete)))

;;; make-load-form: refused by default, saving-slots rebuilds
(defclass mc-saved () ((a :initarg :a) (b :initarg :b)))
(signals error (make-load-form (make-instance 'mc-saved)))
(let* ((obj (make-instance 'mc-saved :a '(1 2)))
       (forms (multiple-value-list (make-load-form-saving-slots obj)))
       (new (eval (first forms))))
  (eval (subst new obj (second forms)))
  (is-eql (length forms) 2)
  (is (eq (class-of new) (class-of obj)))
  (is-equal (slot-value new 'a) '(1 2))
  (is (not (slot-boundp new 'b))))

;;; a method accepts the keywords its generic function names; a call's
;;; keywords must be named by the generic function or an applicable method
(signals error (eval '(defgeneric mc-keys-bad (x &key foo) (:method (x &key) x))))
(signals error (eval '(defgeneric mc-keys-bad2 (x &key foo) (:method (x &key bar) (list x bar)))))
(defgeneric mc-keys (x &key)
  (:method ((x number) &key foo) (list x foo))
  (:method ((x symbol) &key bar) (list x bar)))
(is-equal (list (mc-keys 1 :foo 3) (mc-keys 'a :bar 4)) '((1 3) (a 4)))
(signals program-error (mc-keys 1 :bar 'a))
(signals program-error (mc-keys 1 :foo))
(is-equal (mc-keys 1 :allow-other-keys t :bar 'a) '(1 nil))
(defgeneric mc-keys-rest (x &key) (:method ((x t) &rest r) r))
(signals program-error (mc-keys-rest 1 :any 2))
(defgeneric mc-keys-allow (x &key &allow-other-keys) (:method ((x t) &key) x))
(is-eql (mc-keys-allow 1 :any 2) 1)

;;; reinitialize-instance accepts the keys of its :after methods
(defclass mc-reinit () ((a :initarg :a)))
(defmethod reinitialize-instance :after ((i mc-reinit) &key (x nil x-p))
  (when x-p (setf (slot-value i 'a) x)))
(is-eql (slot-value (reinitialize-instance (make-instance 'mc-reinit :a 1) :x 3) 'a) 3)
(signals program-error (reinitialize-instance (make-instance 'mc-reinit) :y 3))

;;; call-next-method with arguments other methods apply to is an error
;;; (SBCL's evaluator does not check it)
(defgeneric mc-cnm (x)
  (:method ((x (eql 0))) (call-next-method 1))
  (:method ((x integer)) (if (= x 5) (call-next-method 6) (list 'integer x)))
  (:method ((x t)) (list 't x)))
#-sbcl (signals error (mc-cnm 0))
(is-equal (mc-cnm 5) '(t 6))

;;; slot-unbound's primary value is slot-value's
(defclass mc-unbound () ((e) (f)))
(defmethod slot-unbound ((class t) (obj mc-unbound) (slot (eql 'e))) (values))
(defmethod slot-unbound ((class t) (obj mc-unbound) (slot (eql 'f))) (values 1 2 3))
(is-equal (multiple-value-list (slot-value (make-instance 'mc-unbound) 'e)) '(nil))
(is-equal (multiple-value-list (slot-value (make-instance 'mc-unbound) 'f)) '(1))

;;; change-class keeps a shared slot's value in a local slot
(defclass mc-shared () ((a :allocation :class)))
(defclass mc-local () ((a)))
(let ((o (make-instance 'mc-shared)))
  (setf (slot-value o 'a) 'kept)
  (change-class o 'mc-local)
  (is-eql (slot-value o 'a) 'kept))

;;; allocate-instance of a structure class
(defstruct mc-struct a (b 0 :type integer))
(let ((s (allocate-instance (find-class 'mc-struct))))
  (setf (mc-struct-b s) 5)
  (is (typep s 'mc-struct))
  (is-eql (mc-struct-b s) 5))

;;; an initialization argument's name is a symbol
(signals program-error (shared-initialize (allocate-instance (find-class 'mc-saved)) nil '(a b c) nil))

;;; a defgeneric option given twice
(signals program-error (eval '(defgeneric mc-twice (x) (:documentation "a") (:documentation "b"))))

(done)
