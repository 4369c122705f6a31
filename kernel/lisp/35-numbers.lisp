;;;; 20-numbers.lisp — byte specifiers, boole, and the implementation's
;;;; numeric and call limits.

;;; A byte specifier is a cons (size . position): any object would do, and a
;;; cons prints and stores readably.

(defun %check-byte-spec (bytespec)
  (unless (and (consp bytespec) (typep (car bytespec) '(integer 0))
               (typep (cdr bytespec) '(integer 0)))
    (error 'type-error :datum bytespec :expected-type '(cons (integer 0) (integer 0))))
  bytespec)

(defun byte (size position)
  (check-type size (integer 0))
  (check-type position (integer 0))
  (cons size position))

(defun byte-size (bytespec) (car (%check-byte-spec bytespec)))
(defun byte-position (bytespec) (cdr (%check-byte-spec bytespec)))

(defun %byte-mask (size) (1- (ash 1 size)))

(defun ldb (bytespec integer)
  (%check-byte-spec bytespec)
  (check-type integer integer)
  (logand (ash integer (- (cdr bytespec))) (%byte-mask (car bytespec))))

(defun ldb-test (bytespec integer) (/= 0 (ldb bytespec integer)))

(defun mask-field (bytespec integer)
  (%check-byte-spec bytespec)
  (check-type integer integer)
  (logand integer (ash (%byte-mask (car bytespec)) (cdr bytespec))))

(defun deposit-field (newbyte bytespec integer)
  (%check-byte-spec bytespec)
  (check-type newbyte integer)
  (check-type integer integer)
  (let ((mask (ash (%byte-mask (car bytespec)) (cdr bytespec))))
    (logior (logand integer (lognot mask)) (logand newbyte mask))))

(defun dpb (newbyte bytespec integer)
  (%check-byte-spec bytespec)
  (check-type newbyte integer)
  (deposit-field (ash newbyte (cdr bytespec)) bytespec integer))

;; (setf (ldb bytespec place) new) and (setf (mask-field bytespec place) new)
;; store into PLACE with dpb / deposit-field and return NEW.
(defun %byte-place-expander (depositor)
  (lambda (form &optional env)
    (let ((spec (car (cdr form))) (place (car (cdr (cdr form)))))
      (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place env)
        (let ((btemp (gensym "BYTE")) (new (gensym "NEW")))
          (values (cons btemp temps)
                  (cons spec vals)
                  (list new)
                  `(let ((,(car stores) (,depositor ,new ,btemp ,getter))) ,setter ,new)
                  `(,(car form) ,btemp ,getter)))))))

(%define-setf 'ldb :expander (%byte-place-expander 'dpb))
(%define-setf 'mask-field :expander (%byte-place-expander 'deposit-field))

;;; boole and its sixteen operations

(defconstant boole-clr 0)
(defconstant boole-set 1)
(defconstant boole-1 2)
(defconstant boole-2 3)
(defconstant boole-c1 4)
(defconstant boole-c2 5)
(defconstant boole-and 6)
(defconstant boole-ior 7)
(defconstant boole-xor 8)
(defconstant boole-eqv 9)
(defconstant boole-nand 10)
(defconstant boole-nor 11)
(defconstant boole-andc1 12)
(defconstant boole-andc2 13)
(defconstant boole-orc1 14)
(defconstant boole-orc2 15)

(defun boole (op integer-1 integer-2)
  (check-type integer-1 integer)
  (check-type integer-2 integer)
  (case op
    (0 0)
    (1 -1)
    (2 integer-1)
    (3 integer-2)
    (4 (lognot integer-1))
    (5 (lognot integer-2))
    (6 (logand integer-1 integer-2))
    (7 (logior integer-1 integer-2))
    (8 (logxor integer-1 integer-2))
    (9 (logeqv integer-1 integer-2))
    (10 (lognand integer-1 integer-2))
    (11 (lognor integer-1 integer-2))
    (12 (logandc1 integer-1 integer-2))
    (13 (logandc2 integer-1 integer-2))
    (14 (logorc1 integer-1 integer-2))
    (15 (logorc2 integer-1 integer-2))
    (t (error 'type-error :datum op :expected-type '(integer 0 15)))))

;;; limits of this implementation

(defconstant call-arguments-limit 100000)
(defconstant lambda-parameters-limit 100000)
(defconstant multiple-values-limit 64)
(defconstant array-rank-limit 65)
(defconstant array-dimension-limit most-positive-fixnum)
(defconstant array-total-size-limit most-positive-fixnum)
(defconstant lambda-list-keywords
  '(&optional &rest &key &aux &body &whole &environment &allow-other-keys))
