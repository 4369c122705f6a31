;;; defstruct options as models use them: conc-name, BOA constructors,
;;; :include, :print-function, :print-object, :type list / vector, :named.
(defstruct (point (:conc-name pt-) (:constructor make-point (x y)))
  (x 0 :type number) (y 0 :type number))

(defstruct (point3 (:include point) (:conc-name p3-) (:constructor make-point3 (x y z)))
  (z 0))

(defstruct (card (:print-function print-card))
  rank suit)

(defun print-card (card stream depth)
  (declare (ignore depth))
  (format stream "<~a of ~a>" (card-rank card) (card-suit card)))

(defstruct (money (:print-object (lambda (m s) (format s "$~,2f" (money-amount m)))))
  (amount 0))

(defstruct (vec2 (:type list)) x y)
(defstruct (rgb (:type vector)) r g b)
(defstruct (tagged (:type list) :named) a b)

(defstruct (employee (:constructor new-employee (name &optional (salary 1000) &key dept)))
  name salary dept)

(defstruct (queue (:constructor %make-queue))
  (items '() :type list)
  (count 0 :read-only t))

(defstruct animal name (legs 4))
(defstruct (dog (:include animal (legs 4))) breed)
(defstruct (bird (:include animal (legs 2))) (can-fly t))

(let ((p (make-point 3 4)))
  (format t "point ~a ~a -> ~a~%" (pt-x p) (pt-y p) p)
  (setf (pt-x p) 10)
  (format t "moved: ~s~%" p)
  (format t "copy equal? ~a eq? ~a~%" (equalp p (copy-point p)) (eq p (copy-point p))))

(let ((q (make-point3 1 2 3)))
  (format t "~a ~a ~a point-p=~a point3-p=~a~%" (pt-x q) (pt-y q) (p3-z q) (point-p q) (point3-p q))
  (format t "~s~%" q)
  (format t "p3-x ~a~%" (p3-x q)))

(let ((c (make-card :rank 'queen :suit 'hearts)))
  (format t "Card: ~a / ~s~%" c c)
  (format t "In list: ~a~%" (list c (make-card :rank 2 :suit 'spades))))

(format t "Money: ~a ~s~%" (make-money :amount 12.5) (make-money :amount 3))

(let ((v (make-vec2 :x 1 :y 2)))
  (format t "vec2 as list: ~s, x=~a~%" v (vec2-x v))
  (setf (vec2-y v) 20)
  (format t "after setf: ~s~%" v))

(let ((c (make-rgb :r 255 :g 128 :b 0)))
  (format t "rgb: ~s green ~a~%" c (rgb-g c)))

(let ((tg (make-tagged :a 1 :b 2)))
  (format t "tagged: ~s b=~a~%" tg (tagged-b tg)))

(format t "~s~%" (new-employee "Ann"))
(format t "~s~%" (new-employee "Bob" 2000 :dept "R&D"))
(format t "~s~%" (%make-queue :items '(1 2)))

(let ((d (make-dog :name "Rex" :breed "collie"))
      (b (make-bird :name "Tweety")))
  (dolist (a (list d b (make-animal :name "Generic")))
    (format t "~a has ~d legs (~a)~%" (animal-name a) (animal-legs a)
            (typecase a (dog "dog") (bird "bird") (t "animal"))))
  (format t "~s~%~s~%" d b)
  (format t "typep dog animal: ~a, subtypep: ~a~%" (typep d 'animal) (subtypep 'dog 'animal)))

(format t "~a~%" (mapcar #'pt-x (sort (list (make-point 3 0) (make-point 1 0) (make-point 2 0)) #'< :key #'pt-x)))
