;;; A todo-list manager with priorities and dates.
(defpackage :todo (:use :cl))
(in-package :todo)

(defstruct (date (:constructor make-date (year month day)))
  year month day)

(defun date< (a b)
  (or (< (date-year a) (date-year b))
      (and (= (date-year a) (date-year b))
           (or (< (date-month a) (date-month b))
               (and (= (date-month a) (date-month b))
                    (< (date-day a) (date-day b)))))))

(defun format-date (d)
  (format nil "~4,'0d-~2,'0d-~2,'0d" (date-year d) (date-month d) (date-day d)))

(defun parse-date (string)
  (let ((parts (loop with start = 0
                     for dash = (position #\- string :start start)
                     collect (parse-integer string :start start :end dash)
                     while dash do (setf start (1+ dash)))))
    (destructuring-bind (y m d) parts
      (make-date y m d))))

(defun day-of-week (d)
  ;; Zeller-like via universal time
  (let ((ut (encode-universal-time 0 0 12 (date-day d) (date-month d) (date-year d) 0)))
    (nth (nth-value 6 (decode-universal-time ut 0))
         '("Mon" "Tue" "Wed" "Thu" "Fri" "Sat" "Sun"))))

(defun days-between (a b)
  (round (- (encode-universal-time 0 0 0 (date-day b) (date-month b) (date-year b) 0)
            (encode-universal-time 0 0 0 (date-day a) (date-month a) (date-year a) 0))
         86400))

(defclass task ()
  ((title :initarg :title :accessor task-title)
   (priority :initarg :priority :initform :medium :accessor task-priority
             :type (member :low :medium :high :urgent))
   (due :initarg :due :initform nil :accessor task-due)
   (tags :initarg :tags :initform '() :accessor task-tags)
   (done :initform nil :accessor task-done)))

(defvar *next-id* 0)
(defclass numbered-task (task)
  ((id :reader task-id)))

(defmethod initialize-instance :after ((task numbered-task) &key)
  (setf (slot-value task 'id) (incf *next-id*)))

(defun priority-rank (p) (position p '(:urgent :high :medium :low)))

(defmethod print-object ((task task) stream)
  (if *print-escape*
      (print-unreadable-object (task stream :type t)
        (format stream "~s" (task-title task)))
      (with-accessors ((title task-title) (pri task-priority) (due task-due) (done task-done)) task
        (format stream "[~:[ ~;x~]] ~a ~10a ~@[(due ~a)~]"
                done (string-upcase (subseq (symbol-name pri) 0 1)) title
                (and due (format-date due))))))

(defparameter *tasks*
  (list (make-instance 'numbered-task :title "Write report" :priority :high :due (parse-date "2024-03-15") :tags '(work))
        (make-instance 'numbered-task :title "Buy milk" :priority :low :tags '(home shopping))
        (make-instance 'numbered-task :title "Fix bug 42" :priority :urgent :due (parse-date "2024-03-10") :tags '(work code))
        (make-instance 'numbered-task :title "Call mom" :due (parse-date "2024-03-12") :tags '(home))
        (make-instance 'numbered-task :title "Review PR" :priority :high :due (parse-date "2024-03-10") :tags '(work code))
        (make-instance 'numbered-task :title "Gym" :priority :medium :tags '(health))))

(setf (task-done (find "Buy milk" *tasks* :key #'task-title :test #'string=)) t)

(defun sorted-tasks (tasks)
  (stable-sort (copy-list tasks)
               (lambda (a b)
                 (let ((pa (priority-rank (task-priority a))) (pb (priority-rank (task-priority b))))
                   (cond ((/= pa pb) (< pa pb))
                         ((and (task-due a) (task-due b)) (date< (task-due a) (task-due b)))
                         (t (and (task-due a) (not (task-due b)))))))))

(format t "All tasks by priority:~%")
(dolist (task (sorted-tasks *tasks*))
  (format t "  ~3d. ~a~%" (task-id task) task))

(format t "~%Printed readably-ish: ~s~%" (first *tasks*))
(format t "Princ: ~a~%" (first *tasks*))

(format t "~%By tag:~%")
(let ((by-tag (make-hash-table)))
  (dolist (task *tasks*)
    (dolist (tag (task-tags task))
      (push (task-title task) (gethash tag by-tag))))
  (let ((tags (sort (loop for k being the hash-keys of by-tag collect k) #'string<)))
    (dolist (tag tags)
      (format t "  ~(~a~): ~{~a~^, ~}~%" tag (reverse (gethash tag by-tag))))))

(let ((today (make-date 2024 3 11)))
  (format t "~%Relative to ~a (~a):~%" (format-date today) (day-of-week today))
  (loop for task in *tasks*
        for due = (task-due task)
        when due
          do (let ((d (days-between today due)))
               (format t "  ~12a ~a ~a: ~[due today~:;~:*~d day~:p left~]~%"
                       (task-title task) (format-date due) (day-of-week due)
                       (if (minusp d) 0 d)))))

(format t "~%Counts: ~{~a=~a~^ ~}~%"
        (loop for p in '(:urgent :high :medium :low)
              collect p collect (count p *tasks* :key #'task-priority)))
(format t "Open: ~d, done: ~d~%" (count-if-not #'task-done *tasks*) (count-if #'task-done *tasks*))
(format t "Any urgent open? ~a~%" (some (lambda (task) (and (eq (task-priority task) :urgent) (not (task-done task)))) *tasks*))
(format t "All titled? ~a~%" (every #'task-title *tasks*))
(format t "Work titles: ~s~%" (mapcar #'task-title (remove-if-not (lambda (task) (member 'work (task-tags task))) *tasks*)))
(format t "Type of: ~a ~a~%" (type-of (first *tasks*)) (typep (first *tasks*) 'task))
(multiple-value-bind (s m h d mo y dow) (decode-universal-time (encode-universal-time 5 4 3 2 1 2000 0) 0)
  (format t "~d ~d ~d ~d ~d ~d ~d~%" s m h d mo y dow))
