;;; (No pretty printer: the list printed below is built while it prints.)
(setf *print-pretty* nil)
;;; Growing a class while instances exist.
(defclass task ()
  ((title :initarg :title :accessor title)
   (done :initarg :done :initform nil :accessor done)))

(defmethod print-object ((tk task) s)
  (print-unreadable-object (tk s :type t)
    (format s "~s~:[~; done~]" (title tk) (done tk))))

(defvar *tasks* (list (make-instance 'task :title "write")
                      (make-instance 'task :title "test" :done t)))
(format t "~a~%" *tasks*)

(defmethod update-instance-for-redefined-class :after
    ((tk task) added discarded plist &key)
  (format t "updating ~s: added ~s discarded ~s plist ~s~%" (title tk) added discarded plist)
  (when (member 'priority added)
    (setf (slot-value tk 'priority) (if (getf plist 'done) 0 5))))

(defclass task ()
  ((title :initarg :title :accessor title)
   (priority :initarg :priority :initform 1 :accessor priority)))

(defmethod print-object ((tk task) s)
  (print-unreadable-object (tk s :type t)
    (format s "~s p~a" (title tk) (priority tk))))

(format t "~a~%" *tasks*)
(push (make-instance 'task :title "ship" :priority 9) *tasks*)
(format t "~a~%" (sort (copy-list *tasks*) #'> :key #'priority))
(format t "~a~%" (mapcar (lambda (tk) (slot-exists-p tk 'done)) *tasks*))
(defclass urgent-task (task) ((deadline :initarg :deadline :reader deadline)))
(let ((tk (second *tasks*)))
  (change-class tk 'urgent-task :deadline "friday")
  (format t "~a ~a ~a~%" tk (type-of tk) (deadline tk)))
