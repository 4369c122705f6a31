;;;; 62-types.lisp — SUBTYPEP as a decision procedure.
;;
;; A type specifier is split into disjoint domains, each kept in a form
;; whose inclusion is decidable:
;;   - the four kinds of real (integer, ratio, single-float, double-float;
;;     short-float is single and long-float double here), each a sorted
;;     list of disjoint intervals with exact rational bounds;
;;   - complex numbers, a bit set of part kinds (rational, single, double);
;;   - characters, a bit set of classes (standard, other) and a list of
;;     characters whose membership is the opposite of their class's bit;
;;   - every other object, a specifier over them (classes, conses, arrays,
;;     symbols, members ...), decided by the class-based %SUBTYPEP.
;; AND, OR, NOT, MEMBER, EQL and DEFTYPE expansions are carried out on the
;; split form, so (integer 0 10) against (or (integer 0 3) (integer 4 10))
;; or (real 0 (1)) against (not (float * (0))) are answered with certainty.
;; A SATISFIES type (an arbitrary predicate) stops the split: the answer
;; is then %SUBTYPEP's, usually "cannot tell".

;; An interval is (lo lo-open hi hi-open); NIL bounds are infinite.
(defun %iv-lo< (a b)   ; lower bound a starts before lower bound b
  (let ((x (first a)) (y (first b)))
    (cond ((null x) (not (null y)))
          ((null y) nil)
          ((< x y) t)
          ((> x y) nil)
          (t (and (not (second a)) (second b))))))

(defun %iv-union (a b)
  (let ((all (sort (append a b nil) #'%iv-lo<)) (out nil))   ; SORT is destructive: copy both
    (dolist (iv all (nreverse out))
      (let ((cur (car out)))
        (if (and cur
                 (or (null (third cur)) (null (first iv))
                     (< (first iv) (third cur))
                     (and (= (first iv) (third cur)) (not (and (fourth cur) (second iv))))))
            ;; overlapping or touching: extend the current one
            (let ((hi (third iv)) (ho (fourth iv)))
              (cond ((null (third cur)))
                    ((null hi) (setf (car out) (list (first cur) (second cur) nil nil)))
                    ((> hi (third cur)) (setf (car out) (list (first cur) (second cur) hi ho)))
                    ((and (= hi (third cur)) (not ho))
                     (setf (car out) (list (first cur) (second cur) hi nil)))))
            (push (copy-list iv) out))))))

(defun %iv-complement (a)
  (let ((out nil) (lo nil) (lo-open nil) (start t))
    (dolist (iv a)
      (when (or (not start) (first iv))
        (push (list lo lo-open (first iv) (not (second iv))) out))
      (setq start nil lo (third iv) lo-open (not (fourth iv)))
      (unless lo (return-from %iv-complement (nreverse out))))
    (push (list lo lo-open nil nil) out)
    (nreverse out)))

(defun %iv-intersection (a b)
  (%iv-complement (%iv-union (%iv-complement a) (%iv-complement b))))

;; Whether interval IV holds an element of KIND.
(defun %iv-inhabited (iv kind)
  (destructuring-bind (lo lo-open hi hi-open) iv
    (case kind
      (:integer
       (let ((l (and lo (if lo-open (1+ (floor lo)) (ceiling lo))))
             (h (and hi (if hi-open (1- (ceiling hi)) (floor hi)))))
         (or (null l) (null h) (<= l h))))
      (t (or (null lo) (null hi) (< lo hi)
             (and (= lo hi) (not lo-open) (not hi-open)
                  (or (not (eq kind :ratio)) (not (integerp lo)))))))))

(defun %iv-empty (set kind)
  (dolist (iv set t)
    (if (%iv-inhabited iv kind) (return nil))))

;; A split type: #(integer ratio single double complex-bits char-bits
;; char-exceptions rest).
(defconstant +ty-kinds+ '(:integer :ratio :single :double))
(defconstant +ty-all+ '((nil nil nil nil)))

(defun %ty-make (&key ints ratios singles doubles (cx 0) (chb 0) chx (rest nil))
  (vector ints ratios singles doubles cx chb chx rest))

(defun %ty-full () (%ty-make :ints +ty-all+ :ratios +ty-all+ :singles +ty-all+ :doubles +ty-all+
                             :cx 7 :chb 3 :rest t))

(defun %ty-rest (spec) (%ty-make :rest spec))

(defun %char-bit (c) (if (typep c 'standard-char) 1 2))

(defun %char-in (bits exc c)
  (if (member c exc) (zerop (logand bits (%char-bit c))) (plusp (logand bits (%char-bit c)))))

;; Combine two character components by OP (a function of two booleans).
(defun %char-combine (b1 x1 b2 x2 op)
  (let ((bits 0) (exc nil))
    (dolist (bit '(1 2))
      (if (funcall op (plusp (logand b1 bit)) (plusp (logand b2 bit))) (setq bits (logior bits bit))))
    (dolist (c (union x1 x2))
      (unless (eq (funcall op (%char-in b1 x1 c) (%char-in b2 x2 c)) (plusp (logand bits (%char-bit c))))
        (push c exc)))
    (values bits exc)))

(defun %spec-same (a b)   ; EQUAL would take (member "a") for (member "a")
  (cond ((eq a b) t)
        ((and (consp a) (consp b))
         (if (member (car a) '(member eql))
             (and (eq (car a) (car b)) (eql (list-length a) (list-length b))
                  (list-length a) (every #'eql (cdr a) (cdr b)))
             (and (%spec-same (car a) (car b)) (%spec-same (cdr a) (cdr b)))))
        (t (eql a b))))
(defun %rest-opposite (a b)
  (or (and (consp a) (eq (car a) 'not) (%spec-same (second a) b))
      (and (consp b) (eq (car b) 'not) (%spec-same (second b) a))))
(defun %rest-or (a b)
  (cond ((or (eq a t) (eq b t) (%rest-opposite a b)) t) ((null a) b) ((null b) a) ((%spec-same a b) a)
        (t (list 'or a b))))
(defun %rest-and (a b)
  (cond ((or (null a) (null b) (%rest-opposite a b)) nil) ((eq a t) b) ((eq b t) a) ((%spec-same a b) a)
        (t (list 'and a b))))
(defun %rest-not (a)
  (cond ((eq a t) nil) ((null a) t) ((and (consp a) (eq (car a) 'not)) (second a)) (t (list 'not a))))

(defun %ty-or (a b)
  (multiple-value-bind (bits exc)
      (%char-combine (svref a 5) (svref a 6) (svref b 5) (svref b 6) (lambda (x y) (or x y)))
    (vector (%iv-union (svref a 0) (svref b 0)) (%iv-union (svref a 1) (svref b 1))
            (%iv-union (svref a 2) (svref b 2)) (%iv-union (svref a 3) (svref b 3))
            (logior (svref a 4) (svref b 4)) bits exc (%rest-or (svref a 7) (svref b 7)))))

(defun %ty-not (a)
  (vector (%iv-complement (svref a 0)) (%iv-complement (svref a 1))
          (%iv-complement (svref a 2)) (%iv-complement (svref a 3))
          (logxor 7 (svref a 4)) (logxor 3 (svref a 5)) (svref a 6) (%rest-not (svref a 7))))

(defun %ty-and (a b) (%ty-not (%ty-or (%ty-not a) (%ty-not b))))

;; The interval of a numeric specifier's bounds (lo hi), given as the
;; specifier's arguments: * or absent, a real, or (real) for exclusive.
(defun %ty-bounds (args)
  (flet ((bound (b)
           (cond ((or (null b) (eq b '*)) (values nil nil))
                 ((realp b) (values (rational b) nil))
                 ((and (consp b) (realp (car b)) (null (cdr b))) (values (rational (car b)) t))
                 (t (error "malformed bound ~S in a numeric type specifier" b)))))
    (multiple-value-bind (lo lo-open) (bound (first args))
      (multiple-value-bind (hi hi-open) (bound (second args))
        (list (list lo lo-open hi hi-open))))))

(defun %ty-range (kinds args)
  (let ((r (%ty-bounds args)))
    (%ty-make :ints (if (member :integer kinds) r) :ratios (if (member :ratio kinds) r)
              :singles (if (member :single kinds) r) :doubles (if (member :double kinds) r))))

(defun %ty-int (lo hi) (%ty-make :ints (list (list lo nil hi nil))))

(defun %ty-member (objects)
  (let ((ty (%ty-make)) (others nil))
    (dolist (x objects)
      (let ((pt (list (list x nil x nil))))
        (typecase x
          (integer (setf (svref ty 0) (%iv-union (svref ty 0) pt)))
          (ratio (setf (svref ty 1) (%iv-union (svref ty 1) pt)))
          ;; -0.0 and 0.0 are not EQL: a zero is no interval
          ((or complex (and float (satisfies zerop))) (throw '%ty-unknown :unknown))
          (single-float (setf (svref ty 2) (%iv-union (svref ty 2) (list (list (rational x) nil (rational x) nil)))))
          (float (setf (svref ty 3) (%iv-union (svref ty 3) (list (list (rational x) nil (rational x) nil)))))
          (character (unless (%char-in (svref ty 5) (svref ty 6) x) (push x (svref ty 6))))
          (t (pushnew x others)))))
    (when others (setf (svref ty 7) (cons 'member (nreverse others))))
    ty))

(defun %ty-complex-bits (part)
  (if (eq part '*) 7
      (let ((up (upgraded-complex-part-type part)))
        (case up
          (rational 1) ((single-float short-float) 2) ((double-float long-float) 4)
          (float 6) (real 7) ((nil) 0)
          (t (throw '%ty-unknown :unknown))))))

(defun %ty-standard-class-name (c)
  (let ((n (class-name c)))
    (if (and (symbolp n) (eq (find-class n nil) c)) n)))

;; The split form of specifier TYPE; throws %TY-UNKNOWN when it cannot be
;; split (SATISFIES, a malformed or circular specifier).
(defun %ty (type &optional (depth 0))
  (if (> depth 200) (throw '%ty-unknown :unknown))
  (let ((d (1+ depth)))
    (cond
      ((eq type t) (%ty-full))
      ((null type) (%ty-make))
      ((typep type 'class)
       (let ((n (%ty-standard-class-name type)))   ; a class is the type its name names
         (if n (%ty n d) (%ty-rest type))))
      ((symbolp type) (%ty-symbol type type d))
      ((not (consp type)) (throw '%ty-unknown :unknown))
      (t
       (let ((head (car type)) (args (cdr type)))
         (unless (and (listp args) (list-length args)) (throw '%ty-unknown :unknown))
         (case head
           (and (let ((r (%ty-full))) (dolist (x args r) (setq r (%ty-and r (%ty x d))))))
           (or (let ((r (%ty-make))) (dolist (x args r) (setq r (%ty-or r (%ty x d))))))
           (not (%ty-not (%ty (first args) d)))
           (member (%ty-member args))
           (eql (%ty-member (list (first args))))
           (satisfies (throw '%ty-unknown :unknown))
           (integer (%ty-range '(:integer) args))
           (rational (%ty-range '(:integer :ratio) args))
           (real (%ty-range +ty-kinds+ args))
           (float (%ty-range '(:single :double) args))
           ((single-float short-float) (%ty-range '(:single) args))
           ((double-float long-float) (%ty-range '(:double) args))
           (mod (%ty-int 0 (1- (first args))))
           (unsigned-byte (if (or (null args) (eq (first args) '*)) (%ty-int 0 nil)
                              (%ty-int 0 (1- (ash 1 (first args))))))
           (signed-byte (if (or (null args) (eq (first args) '*)) (%ty-int nil nil)
                            (%ty-int (- (ash 1 (1- (first args)))) (1- (ash 1 (1- (first args)))))))
           (complex (%ty-make :cx (%ty-complex-bits (if args (first args) '*))))
           (t (let ((e (and (symbolp head) (%meta head '%deftype))))
                (if e (%ty (apply e args) d) (%ty-rest type))))))))))

(defun %ty-symbol (name spec d)
  (case name
    ((integer signed-byte) (%ty-int nil nil))
    (fixnum (%ty-int most-negative-fixnum most-positive-fixnum))
    (bignum (%ty-make :ints (list (list nil nil (1- most-negative-fixnum) nil)
                                  (list (1+ most-positive-fixnum) nil nil nil))))
    (bit (%ty-int 0 1))
    (unsigned-byte (%ty-int 0 nil))
    (ratio (%ty-make :ratios +ty-all+))
    (rational (%ty-make :ints +ty-all+ :ratios +ty-all+))
    (real (%ty-range +ty-kinds+ nil))
    (float (%ty-make :singles +ty-all+ :doubles +ty-all+))
    ((single-float short-float) (%ty-make :singles +ty-all+))
    ((double-float long-float) (%ty-make :doubles +ty-all+))
    (number (let ((r (%ty-range +ty-kinds+ nil))) (setf (svref r 4) 7) r))
    (complex (%ty-make :cx 7))
    ((character base-char) (%ty-make :chb 3))
    (standard-char (%ty-make :chb 1))
    (extended-char (%ty-make))
    (atom (let ((r (%ty-full))) (setf (svref r 7) '(not cons)) r))
    (boolean (%ty-member '(nil t)))
    (compiled-function (%ty-rest 'function))   ; every function is compiled here
    (t (let ((e (%meta name '%deftype)))
         (if e (%ty (funcall e) d) (%ty-rest spec))))))

(defun %ty-has-not (spec)
  (and (consp spec)
       (or (eq (car spec) 'not)
           (and (member (car spec) '(and or)) (some #'%ty-has-not (cdr spec))))))

;; :yes, :no or :unknown: whether split type A is within split type B.
(defun %ty-within (a b)
  (let ((diff (%ty-and a (%ty-not b))) (kinds +ty-kinds+))
    (dotimes (i 4)
      (unless (%iv-empty (svref diff i) (nth i kinds)) (return-from %ty-within :no)))
    (unless (and (zerop (svref diff 4)) (zerop (svref diff 5)) (null (svref diff 6)))
      (return-from %ty-within :no))
    (%rest-within (svref a 7) (svref b 7))))

(defun %ty-answer (type1 type2)
  (multiple-value-bind (r certain) (subtypep type1 type2)
    (if certain (if r :yes :no) :unknown)))

(defun %cons-parts (spec)
  (if (consp spec)
      (values (if (and (cdr spec) (not (eq (second spec) '*))) (second spec) t)
              (if (and (cddr spec) (not (eq (third spec) '*))) (third spec) t))
      (values t t)))

(defun %cons-spec-p (spec)
  (or (eq spec 'cons) (and (consp spec) (eq (car spec) 'cons))))

(defun %array-spec-p (spec)
  (let ((h (if (consp spec) (car spec) spec)))
    (member h '(array simple-array vector simple-vector string simple-string base-string
                simple-base-string bit-vector simple-bit-vector))))

;; :yes, :no or :unknown: whether RA is within RB, both specifiers over
;; the objects that are neither numbers nor characters.
(defun %rest-within (ra rb)
  (cond
    ((or (null ra) (eq rb t)) :yes)
    ((and (consp ra) (eq (car ra) 'or))
     (let ((r :yes))
       (dolist (x (cdr ra) r)
         (case (%rest-within x rb) (:no (return :no)) (:unknown (setq r :unknown))))))
    ((and (consp rb) (eq (car rb) 'and))
     (let ((r :yes))
       (dolist (y (cdr rb) r)
         (case (%rest-within ra y) (:no (return :no)) (:unknown (setq r :unknown))))))
    ((and (consp rb) (eq (car rb) 'or)
          (dolist (y (cdr rb)) (if (eq (%rest-within ra y) :yes) (return t))))
     :yes)
    ((and (%cons-spec-p ra) (multiple-value-bind (a1 d1) (%cons-parts ra)
                              (or (eq (%ty-answer a1 nil) :yes) (eq (%ty-answer d1 nil) :yes))))
     :yes)                                ; no cons has a part of type NIL
    ((and (%cons-spec-p ra) (or (%cons-spec-p rb) (null rb)))
     (multiple-value-bind (a1 d1) (%cons-parts ra)
       (multiple-value-bind (a2 d2) (%cons-parts rb)
         (let ((ea (%ty-answer a1 nil)) (ed (%ty-answer d1 nil)))
           (cond ((or (eq ea :yes) (eq ed :yes)) :yes)   ; no cons has a part of type NIL
                 ((null rb) (if (and (eq ea :no) (eq ed :no)) :no :unknown))
                 (t (let ((r1 (%ty-answer a1 a2)) (r2 (%ty-answer d1 d2)))
                      (cond ((and (eq r1 :yes) (eq r2 :yes)) :yes)
                            ((and (or (eq r1 :no) (eq r2 :no)) (eq ea :no) (eq ed :no)) :no)
                            (t :unknown)))))))))
    ((and (%cons-spec-p ra) (symbolp rb) (eq (%subtypep 'cons rb) t)) :yes)
    ((eq ra 'keyword) (if (eq (%rest-within 'symbol rb) :yes) :yes (%rest-old ra rb)))
    ((and (consp rb) (eq (car rb) 'not) (%rest-disjoint ra (second rb))) :yes)
    ((and (null rb) (or (%array-spec-p ra) (and (symbolp ra) (find-class ra nil)) (typep ra 'class)))
     :no)
    (t (%rest-old ra rb))))

(defun %spec-class (spec)
  (cond ((typep spec 'class) spec)
        ((%cons-spec-p spec) (find-class 'cons))
        ((eq spec 'keyword) (find-class 'symbol))
        ((%array-spec-p spec) (find-class (if (member (if (consp spec) (car spec) spec)
                                                       '(array simple-array))
                                                   'array 'vector)))
        ((symbolp spec) (find-class spec nil))))

;; Whether specifiers A and B (over the other objects) have no common
;; element: classes neither of which is within the other, one of them
;; built in (only a standard class can have several superclasses).
(defun %rest-disjoint (a b)
  (let ((ca (%spec-class a)) (cb (%spec-class b)))
    (and ca cb (not (eq ca cb))
         (not (%subtypep ca cb)) (not (%subtypep cb ca))
         (or (typep ca 'built-in-class) (typep cb 'built-in-class)))))

(defun %rest-old (ra rb)
  (multiple-value-bind (r certain) (%subtypep ra rb)
    (cond (certain (if r :yes :no))
          ;; classes and members alone do not cover all the other objects
          ((and (eq ra t) (not (%ty-has-not rb))) :no)
          (t :unknown))))

(defun subtypep (type1 type2 &optional environment)
  (declare (ignore environment))
  (if (eq type1 type2) (return-from subtypep (values t t)))
  (let ((r (catch '%ty-unknown (%ty-within (%ty type1) (%ty type2)))))
    (case r
      (:yes (values t t))
      (:no (values nil t))
      (t (%subtypep type1 type2)))))

;; A complex's parts are both rational, both single-floats or both
;; double-floats: the part type that holds every part of type TYPESPEC is
;; the smallest of NIL (no parts), RATIONAL, SINGLE-FLOAT, DOUBLE-FLOAT,
;; FLOAT and REAL that contains it (REAL when that cannot be told).  The
;; order keeps upgrading monotonic: a subtype upgrades to a subtype.
(defun upgraded-complex-part-type (typespec &optional environment)
  "(upgraded-complex-part-type typespec &optional environment) NIL, RATIONAL, SINGLE-FLOAT, DOUBLE-FLOAT, FLOAT or REAL."
  (dolist (up '(nil rational single-float double-float float) 'real)
    (if (subtypep typespec up environment) (return up))))
