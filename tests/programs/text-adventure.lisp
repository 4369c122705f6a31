;;; A small text-adventure command parser.
(defpackage :adventure (:use :cl))
(in-package :adventure)

(defparameter *rooms*
  '((hall (description "a long hall with portraits")
          (exits (north . library) (east . kitchen)))
    (library (description "a dusty library")
             (exits (south . hall)))
    (kitchen (description "a kitchen smelling of bread")
             (exits (west . hall) (down . cellar)))
    (cellar (description "a dark, damp cellar")
            (exits (up . kitchen)))))

(defparameter *objects* (list (cons 'lamp 'hall) (cons 'book 'library)
                              (cons 'knife 'kitchen) (cons 'wine 'cellar)))

(defvar *location* 'hall)
(defvar *inventory* '())

(defun room-property (room prop)
  (cadr (assoc prop (cdr (assoc room *rooms*)))))

(defun room-exits (room)
  (cdr (assoc 'exits (cdr (assoc room *rooms*)))))

(defun objects-at (room)
  (loop for (obj . place) in *objects*
        when (eq place room) collect obj))

(defun tokenize (line)
  (let ((words '()) (current (make-string-output-stream)))
    (flet ((flush ()
             (let ((w (get-output-stream-string current)))
               (when (plusp (length w)) (push w words)))))
      (loop for ch across line
            do (cond ((alpha-char-p ch) (write-char (char-downcase ch) current))
                     (t (flush))))
      (flush))
    (nreverse words)))

(defparameter *stop-words* '("the" "a" "an" "to" "at"))

(defun parse-command (line)
  (let ((words (remove-if (lambda (w) (member w *stop-words* :test #'string=))
                          (tokenize line))))
    (when words
      (let ((verb (intern (string-upcase (first words)) :keyword))
            (args (mapcar (lambda (w) (intern (string-upcase w) :adventure)) (rest words))))
        (values verb args)))))

(defun describe-room ()
  (format t "You are in ~a.~%" (room-property *location* 'description))
  (let ((objs (objects-at *location*)))
    (when objs
      (format t "You see: ~{~(~a~)~^, ~}.~%" objs)))
  (format t "Exits: ~{~(~a~)~^ ~}~%" (mapcar #'car (room-exits *location*))))

(defun execute (line)
  (format t "> ~a~%" line)
  (multiple-value-bind (verb args) (parse-command line)
    (case verb
      ((:look :l) (describe-room))
      ((:go :walk :move)
       (let ((dest (cdr (assoc (first args) (room-exits *location*)))))
         (if dest
             (progn (setf *location* dest) (describe-room))
             (format t "You can't go ~(~a~) from here.~%" (or (first args) "nowhere")))))
      ((:take :get)
       (let ((obj (first args)))
         (cond ((member obj (objects-at *location*))
                (setf *objects* (remove obj *objects* :key #'car))
                (push obj *inventory*)
                (format t "Taken: ~(~a~).~%" obj))
               (t (format t "There is no ~(~a~) here.~%" obj)))))
      ((:drop)
       (let ((obj (first args)))
         (if (member obj *inventory*)
             (progn (setf *inventory* (delete obj *inventory*))
                    (push (cons obj *location*) *objects*)
                    (format t "Dropped ~(~a~).~%" obj))
             (format t "You don't have ~(~a~).~%" obj))))
      ((:inventory :i)
       (if *inventory*
           (format t "You carry ~{~(~a~)~#[~; and ~:;, ~]~}.~%" (reverse *inventory*))
           (format t "You carry nothing.~%")))
      ((nil) (format t "Say something.~%"))
      (otherwise (format t "I don't know how to ~(~a~).~%" verb)))))

(dolist (cmd '("look" "take the lamp" "go north" "take book" "take sword"
               "go south" "go east" "get the knife" "go down" "take wine"
               "inventory" "drop knife" "look" "dance wildly" "" "go up" "go west"
               "I"))
  (execute cmd))

(format t "Final: ~a with ~d items~%" *location* (length *inventory*))
(format t "Objects: ~s~%" (sort (copy-list *objects*) #'string< :key (lambda (c) (symbol-name (car c)))))
