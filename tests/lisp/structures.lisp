;;;; structures.lisp -- DEFSTRUCT.
(suite "structures")

(defstruct point x y)
(defstruct (st-person) name (age 0) (tags '()))
(defstruct st-counter (count 0 :type integer) (label "none" :read-only t))

;;; constructor with keyword arguments and defaults
(is (point-p (make-point :x 1 :y 2)))
(is-eql (point-x (make-point :x 1 :y 2)) 1)
(is-eql (point-y (make-point :x 1 :y 2)) 2)
(is-eql (point-x (make-point)) nil)
(is-eql (point-y (make-point :y 5)) 5)
(is-eql (st-person-age (make-st-person :name "al")) 0)
(is-equal (st-person-name (make-st-person :name "al")) "al")
(is-equal (st-person-tags (make-st-person)) '())
(is-eql (st-counter-count (make-st-counter)) 0)
(is-equal (st-counter-label (make-st-counter :label "c")) "c")

;;; default forms are evaluated at each construction
(defvar *st-serial* 0)
(defstruct st-item (id (incf *st-serial*)))
(is-equal (list (st-item-id (make-st-item)) (st-item-id (make-st-item))) '(1 2))
(is-eql (st-item-id (make-st-item :id 99)) 99)
(is-eql *st-serial* 2)
(defstruct st-box (items (list)))
(is (let ((a (make-st-box)) (b (make-st-box)))
      (push 1 (st-box-items a))
      (null (st-box-items b))))

;;; setf of accessors
(is-eql (let ((p (make-point :x 1 :y 2))) (setf (point-x p) 10) (point-x p)) 10)
(is-eql (let ((p (make-point :x 1 :y 2))) (setf (point-x p) 10)) 10)
(is-eql (let ((p (make-point :x 1 :y 2))) (incf (point-y p) 5) (point-y p)) 7)
(is-equal (let ((p (make-st-person))) (push 'a (st-person-tags p)) (push 'b (st-person-tags p)) (st-person-tags p)) '(b a))
(is-equal (let ((p (make-point :x 1 :y 2))) (rotatef (point-x p) (point-y p)) (list (point-x p) (point-y p))) '(2 1))

;;; predicate and type
(is (not (point-p 5)))
(is (not (point-p (make-st-person))))
(is (not (point-p '(1 2))))
(is (typep (make-point) 'point))
(is (not (typep (make-point) 'st-person)))
(is-eql (type-of (make-point)) 'point)
(is (not (consp (make-point))))
(is (not (vectorp (make-point))))

;;; copier and identity
(is (let* ((p (make-point :x 1 :y 2)) (q (copy-point p)))
      (and (not (eq p q)) (eql (point-x q) 1) (eql (point-y q) 2))))
(is-eql (let* ((p (make-point :x 1 :y 2)) (q (copy-point p))) (setf (point-x q) 9) (point-x p)) 1)
(is (let ((p (make-point :x 1))) (eq p p)))
(is (not (eq (make-point :x 1) (make-point :x 1))))
(is (not (equal (make-point :x 1) (make-point :x 1))))
(is (equalp (make-point :x 1 :y "a") (make-point :x 1 :y "A")))
(is (not (equalp (make-point :x 1) (make-point :x 2))))
(is (let ((p (make-point))) (eql p p)))

;;; printing as #S(...)
(is-equal (prin1-to-string (make-point :x 1 :y 2)) "#S(POINT :X 1 :Y 2)")
(is-equal (prin1-to-string (make-point)) "#S(POINT :X NIL :Y NIL)")
(is-equal (prin1-to-string (make-st-person :name "bo" :age 3)) "#S(ST-PERSON :NAME \"bo\" :AGE 3 :TAGS NIL)")
(is-equal (princ-to-string (make-st-person :name "bo" :age 3)) "#S(ST-PERSON :NAME bo :AGE 3 :TAGS NIL)")
(is-equal (prin1-to-string (list (make-point :x 1 :y (make-point :x 2 :y 3))))
          "(#S(POINT :X 1 :Y #S(POINT :X 2 :Y 3)))")

;;; (:constructor name (args)) BOA constructors, (:copier) and (:predicate) names
(defstruct (st-vec (:constructor st-make-vec (a b &optional (c 0))))
  a b c)
(is-equal (let ((v (st-make-vec 1 2))) (list (st-vec-a v) (st-vec-b v) (st-vec-c v))) '(1 2 0))
(is-eql (st-vec-c (st-make-vec 1 2 3)) 3)
(defstruct (st-named (:constructor new-st-named) (:predicate is-st-named) (:copier dup-st-named))
  (v 1))
(is (is-st-named (new-st-named)))
(is-eql (st-named-v (dup-st-named (new-st-named :v 4))) 4)
(defstruct (st-two-ctors (:constructor st-two-a) (:constructor st-two-b (v))) v)
(is-eql (st-two-ctors-v (st-two-a :v 1)) 1)
(is-eql (st-two-ctors-v (st-two-b 2)) 2)
(defstruct (st-prefixed (:conc-name sp-)) one two)
(is-eql (sp-one (make-st-prefixed :one 1 :two 2)) 1)
(is-eql (let ((s (make-st-prefixed))) (setf (sp-two s) 'z) (sp-two s)) 'z)

;;; :include
(defstruct st-animal name (legs 4))
(defstruct (st-bird (:include st-animal (legs 2))) (can-fly t))
(is (st-animal-p (make-st-bird)))
(is (st-bird-p (make-st-bird)))
(is (not (st-bird-p (make-st-animal))))
(is-eql (st-animal-legs (make-st-bird)) 2)
(is-eql (st-animal-legs (make-st-animal)) 4)
(is-equal (st-animal-name (make-st-bird :name "tweety")) "tweety")
(is-eql (st-bird-can-fly (make-st-bird :can-fly nil)) nil)
(is-equal (st-bird-name (make-st-bird :name "x")) "x")
(is (typep (make-st-bird) 'st-animal))
(is (not (typep (make-st-animal) 'st-bird)))
(is-equal (prin1-to-string (make-st-bird :name "b")) "#S(ST-BIRD :NAME \"b\" :LEGS 2 :CAN-FLY T)")

;;; structures in collections
(is-equal (mapcar #'point-x (list (make-point :x 1) (make-point :x 2))) '(1 2))
(is-equal (mapcar #'point-x (sort (list (make-point :x 3) (make-point :x 1) (make-point :x 2)) #'< :key #'point-x))
          '(1 2 3))
(is-eql (point-y (find 2 (list (make-point :x 1 :y 'a) (make-point :x 2 :y 'b)) :key #'point-x)) 'b)
(is-eql (let ((h (make-hash-table)) (p (make-point))) (setf (gethash p h) 'found) (gethash p h)) 'found)
(is-eql (funcall #'point-x (make-point :x 7)) 7)

;;; redefinition with the same slots is allowed
(defstruct point x y)
(is-eql (point-x (make-point :x 3)) 3)

;;; errors
(signals type-error (point-x 5))
(signals type-error (point-x (make-st-person)))
;;; #S reads a structure back as the printer writes it
(is-eql (point-y (read-from-string "#S(POINT :X 1 :Y 2)")) 2)
(is-eql (point-x (read-from-string "#S(POINT :Y 2)")) nil)
(is (point-p (read-from-string (prin1-to-string (make-point :x '(1 "a") :y #\b)))))
(is-equal (point-x (read-from-string (prin1-to-string (make-point :x '(1 "a"))))) '(1 "a"))
(signals error (read-from-string "#S(NO-SUCH-TYPE :A 1)"))
(signals error (read-from-string "#S(POINT :Z 1)"))

(signals type-error (setf (point-y '(1 2)) 3))
(signals error (make-point :z 1))
(signals error (st-make-vec 1))

;;; :print-function and :print-object print the structure, inherited
;;; through :include; a symbol is called through its name (defined later)
(defstruct (st-card (:print-function st-print-card)) rank suit)
(defun st-print-card (card stream depth)
  (declare (ignore depth))
  (format stream "<~a of ~a>" (st-card-rank card) (st-card-suit card)))
(is-equal (prin1-to-string (make-st-card :rank 'q :suit 'h)) "<Q of H>")
(is-equal (format nil "~a" (list (make-st-card :rank 2 :suit 's))) "(<2 of S>)")
(defstruct (st-money (:print-object (lambda (m s)
                                      (if *print-escape*
                                          (format s "#<money ~a>" (st-money-amount m))
                                          (format s "$~,2f" (st-money-amount m))))))
  (amount 0))
(is-equal (princ-to-string (make-st-money :amount 3)) "$3.00")
(is-equal (prin1-to-string (make-st-money :amount 3)) "#<money 3>")
(defstruct (st-euro (:include st-money)))
(is-equal (princ-to-string (make-st-euro :amount 1/2)) "$0.50")
(defstruct (st-plain (:print-object)) a)
(is (string= "#S(" (subseq (prin1-to-string (make-st-plain)) 0 3)))

;;; (:type list) and (:type vector): the structure is a list or vector
(defstruct (st-v2 (:type list)) x (y 5))
(is-equal (make-st-v2 :x 1) '(1 5))
(is-eql (st-v2-y '(1 2)) 2)
(is (let ((v (make-st-v2 :x 1))) (setf (st-v2-x v) 9) (equal v '(9 5))))
(is (not (fboundp 'st-v2-p)))
(defstruct (st-rgb (:type vector) (:constructor st-rgb (r g b))) r g b)
(is-equalp (st-rgb 1 2 3) #(1 2 3))
(is-eql (st-rgb-g (st-rgb 1 2 3)) 2)
(defstruct (st-tagged (:type list) :named (:initial-offset 1)) a b)
(is-equal (make-st-tagged :a 1 :b 2) '(nil st-tagged 1 2))
(is-eql (st-tagged-b (make-st-tagged :a 1 :b 2)) 2)
(is (st-tagged-p (make-st-tagged)))
(is (not (st-tagged-p '(nil other 1 2))))
(is-equal (copy-st-tagged '(nil st-tagged 3 4)) '(nil st-tagged 3 4))

;;; slot names that are keywords, constants or special variables: the
;;; keyword constructor does not bind them
(defvar *st-special* 100)
(defstruct st-names :k (pi 3) t (*st-special* 0) (after *st-special*))
(is-equal (let ((o (make-st-names :k 1 :t 2 :*st-special* 5)))
            (list (st-names-k o) (st-names-pi o) (st-names-t o) (st-names-*st-special* o) (st-names-after o)))
          '(1 3 2 5 100))
(is-eql (let ((*st-special* 7)) (st-names-after (make-st-names :*st-special* 1))) 7)

;;; BOA constructors: &optional and &key parameters without a default take
;;; the slot's initform; &aux without one leaves the slot as it is made;
;;; slots not named take their initforms; () is a BOA list of no arguments
(defstruct (st-boa (:constructor st-boa-opt (&optional a b))
                   (:constructor st-boa-key (&key a ((:bee b)) &allow-other-keys))
                   (:constructor st-boa-aux (a &aux (b (* a 10))))
                   (:constructor st-boa-none ()))
  (a 1) (b 2) (c 3))
(is-equal (let ((o (st-boa-opt))) (list (st-boa-a o) (st-boa-b o) (st-boa-c o))) '(1 2 3))
(is-equal (let ((o (st-boa-opt 5))) (list (st-boa-a o) (st-boa-b o))) '(5 2))
(is-equal (let ((o (st-boa-key :bee 8 :other 0))) (list (st-boa-a o) (st-boa-b o))) '(1 8))
(is-equal (let ((o (st-boa-aux 4))) (list (st-boa-a o) (st-boa-b o) (st-boa-c o))) '(4 40 3))
(is-equal (let ((o (st-boa-none))) (list (st-boa-a o) (st-boa-b o))) '(1 2))
(signals program-error (st-boa-none 1))

;;; :conc-name nil: the accessors are the slot names
(defstruct (st-bare (:conc-name nil)) bare-left bare-right)
(is-eql (bare-right (make-st-bare :bare-right 4)) 4)

;;; :include with overrides, and an included slot's accessor kept
(defstruct st-shape (sides 0) (name "shape" :read-only t))
(defstruct (st-square (:include st-shape (sides 4))) size)
(is-eql (st-shape-sides (make-st-square)) 4)
(is-eql (st-square-sides (make-st-square :sides 5)) 5)
(is-equal (st-square-name (make-st-square)) "shape")
(is (not (fboundp '(setf st-shape-name))))
(is (not (fboundp '(setf st-square-name))))

;;; :type structures that include others: the parent's places come first
(defstruct (st-l1 (:type list) (:initial-offset 1) :named) a)
(defstruct (st-l2 (:type list) (:initial-offset 2) (:include st-l1) :named) b)
(is-equal (make-st-l2 :a 1 :b 2) '(nil st-l1 1 nil nil st-l2 2))
(is (st-l2-p (make-st-l2)))
(is (st-l1-p (make-st-l2)))
(is-eql (st-l1-a (make-st-l2 :a 6)) 6)
(defstruct (st-bits (:type (vector bit))) (lo 0) (hi 1))
(is-equal (make-st-bits :lo 1) #*11)

;;; bad forms signal errors
(signals error (defstruct (st-bad1 (:type list) (:predicate st-bad1?)) a))
(signals error (defstruct (st-bad2 (:type (vector single-float)) :named) a))
(signals error (defstruct (st-bad3 (:include st-shape (no-such-slot 1)))))
(signals error (defstruct (st-bad4 (:include st-shape (name "x" :read-only nil)))))
(signals error (defstruct st-bad5 a (a 1)))

(done)
