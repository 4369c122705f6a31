;;; Animals: multiple inheritance, call-next-method chains, class counters.
(defclass animal ()
  ((name :initarg :name :reader name)
   (sound :initform "..." :reader sound)
   (count :allocation :class :initform 0 :accessor animal-count)))

(defmethod initialize-instance :after ((a animal) &key)
  (incf (animal-count a)))

(defclass flyer () ((wingspan :initarg :wingspan :initform 1 :reader wingspan)))
(defclass swimmer () ((depth :initarg :depth :initform 10 :reader max-depth)))

(defclass dog (animal) ((sound :initform "Woof")))
(defclass duck (animal flyer swimmer) ((sound :initform "Quack")))
(defclass penguin (animal swimmer) ((sound :initform "Squawk")))
(defclass bat (flyer animal) ((sound :initform "Screech")))

(defgeneric abilities (x)
  (:method-combination standard))
(defmethod abilities ((x t)) '())
(defmethod abilities ((x animal)) (cons 'breathe (call-next-method)))
(defmethod abilities ((x flyer)) (cons 'fly (call-next-method)))
(defmethod abilities ((x swimmer)) (cons 'swim (call-next-method)))
(defmethod abilities ((x penguin)) (cons 'waddle (call-next-method)))

(defgeneric speak (x))
(defmethod speak ((a animal)) (format nil "~a says ~a" (name a) (sound a)))
(defmethod speak :around ((d duck))
  (concatenate 'string "(loudly) " (call-next-method)))

(defgeneric describe-animal (a))
(defmethod describe-animal ((a animal))
  (with-slots (name sound) a
    (format t "~a: ~a, can ~{~(~a~)~^, ~}~%" name sound (abilities a))))
(defmethod describe-animal :after ((f flyer))
  (format t "   wingspan ~a~%" (wingspan f)))
(defmethod describe-animal :before ((s swimmer))
  (format t "~&[swimmer, dives to ~a]~%" (max-depth s)))

(defvar *zoo*
  (list (make-instance 'dog :name "Rex")
        (make-instance 'duck :name "Donald" :wingspan 2)
        (make-instance 'penguin :name "Pingu" :depth 100)
        (make-instance 'bat :name "Bruce")))

(dolist (a *zoo*) (format t "~a~%" (speak a)))
(dolist (a *zoo*) (describe-animal a))
(format t "animals made: ~a~%" (animal-count (first *zoo*)))
(format t "~a~%" (mapcar (lambda (a) (typep a 'flyer)) *zoo*))
(format t "~a~%" (mapcar #'name (remove-if-not (lambda (a) (typep a 'swimmer)) *zoo*)))
(format t "~a~%" (mapcar #'class-name (mapcar #'class-of *zoo*)))
(format t "~a~%" (list (subtypep 'duck 'flyer) (subtypep 'dog 'flyer)))
