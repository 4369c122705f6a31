;;; A turn-based dungeon simulation: classes, generic dispatch, dynamic
;;; variables, tagbody/go, catch/throw, a deterministic pseudo-random generator.
(defpackage :dungeon (:use :cl))
(in-package :dungeon)

(defvar *seed* 42)
(defun next-random (n)
  "A linear congruential generator, so every Lisp gives the same rolls."
  (setf *seed* (mod (+ (* *seed* 1103515245) 12345) 2147483648))
  (mod (floor *seed* 65536) n))

(defvar *verbose* t)
(defvar *turn* 0)

(defmacro narrate (fmt &rest args)
  `(when *verbose* (format t "~&[~2,'0d] ~@?~%" *turn* ,fmt ,@args)))

(defclass creature ()
  ((name :initarg :name :reader name)
   (hp :initarg :hp :accessor hp)
   (max-hp :reader max-hp)
   (attack :initarg :attack :reader attack)
   (defense :initarg :defense :initform 0 :reader defense)))

(defmethod initialize-instance :after ((c creature) &key)
  (setf (slot-value c 'max-hp) (hp c)))

(defclass hero (creature)
  ((potions :initarg :potions :initform 2 :accessor potions)
   (xp :initform 0 :accessor xp)))

(defclass monster (creature)
  ((reward :initarg :reward :reader reward)))

(defclass dragon (monster) ())

(defgeneric take-turn (actor target))
(defgeneric damage-to (attacker defender))

(defmethod damage-to ((a creature) (d creature))
  (max 1 (- (+ (attack a) (next-random 4)) (defense d))))

(defmethod damage-to :around ((a dragon) (d hero))
  (let ((base (call-next-method)))
    (if (zerop (next-random 3))
        (progn (narrate "~a breathes fire!" (name a)) (* 2 base))
        base)))

(defun alive-p (c) (plusp (hp c)))

(defun strike (a d)
  (let ((dmg (damage-to a d)))
    (setf (hp d) (max 0 (- (hp d) dmg)))
    (narrate "~a hits ~a for ~d (~d/~d left)" (name a) (name d) dmg (hp d) (max-hp d))
    (unless (alive-p d) (throw 'fight-over a))))

(defmethod take-turn ((h hero) (m monster))
  (if (and (< (hp h) (floor (max-hp h) 3)) (plusp (potions h)))
      (progn (decf (potions h))
             (setf (hp h) (min (max-hp h) (+ (hp h) 12)))
             (narrate "~a drinks a potion (~d left) and has ~d hp" (name h) (potions h) (hp h)))
      (strike h m)))

(defmethod take-turn ((m monster) (h hero))
  (strike m h))

(defun fight (hero monster)
  (let ((winner (catch 'fight-over
                  (loop
                    (incf *turn*)
                    (take-turn hero monster)
                    (take-turn monster hero)))))
    (narrate "~a wins." (name winner))
    (when (eq winner hero)
      (incf (xp hero) (reward monster)))
    winner))

(defun dungeon-run (hero monsters)
  (let ((defeated '()))
    (tagbody
     next
       (when (null monsters) (go done))
       (let ((m (pop monsters)))
         (format t "~&--- ~a meets ~a (~d hp) ---~%" (name hero) (name m) (hp m))
         (if (eq (fight hero m) hero)
             (push (name m) defeated)
             (go lost)))
       (go next)
     lost
       (format t "~a has fallen after defeating ~{~a~^, ~}.~%" (name hero) (reverse defeated))
       (return-from dungeon-run nil)
     done
       (format t "~a cleared the dungeon: ~{~a~^, ~} (~d xp).~%" (name hero) (reverse defeated) (xp hero))
       (return-from dungeon-run t))))

(let ((hero (make-instance 'hero :name "Ayla" :hp 40 :attack 7 :defense 2 :potions 2)))
  (dungeon-run hero (list (make-instance 'monster :name "Rat" :hp 8 :attack 2 :reward 5)
                          (make-instance 'monster :name "Goblin" :hp 18 :attack 5 :defense 1 :reward 15)
                          (make-instance 'dragon :name "Wyrm" :hp 35 :attack 8 :defense 3 :reward 100))))

(let ((*verbose* nil) (*turn* 0) (wins 0))
  (dotimes (i 20)
    (let ((h (make-instance 'hero :name "Sim" :hp 30 :attack 6 :defense 1))
          (m (make-instance 'monster :name "Orc" :hp 25 :attack 6 :defense 1 :reward 1)))
      (when (eq (fight h m) h) (incf wins))))
  (format t "Simulation: hero won ~d of 20 (~d%), ~d turns~%" wins (round (* 100 wins) 20) *turn*))
(format t "Turn counter outside: ~d~%" *turn*)
