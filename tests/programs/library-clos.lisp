;;; A library system exercising more of CLOS: :around initialize-instance,
;;; keyword arguments to generic functions, eql specializers on symbols,
;;; call-next-method with arguments, change-class, slot-unbound, class slots.
(defpackage :library (:use :cl))
(in-package :library)

(defclass media ()
  ((title :initarg :title :reader title)
   (year :initarg :year :reader year)
   (id :reader media-id)
   (loans :initform 0 :accessor loans)
   (counter :allocation :class :initform 0 :accessor counter)))

(defmethod initialize-instance :around ((m media) &rest args &key title &allow-other-keys)
  (unless title (error "A title is required"))
  (apply #'call-next-method m :title (string-trim " " title) args))

(defmethod initialize-instance :after ((m media) &key)
  (setf (slot-value m 'id) (format nil "M~3,'0d" (incf (counter m)))))

(defclass book (media) ((author :initarg :author :reader author) (pages :initarg :pages :reader pages)))
(defclass dvd (media) ((minutes :initarg :minutes :reader minutes)))
(defclass ebook (book) ((size-mb :initarg :size-mb :reader size-mb)))

(defmethod print-object ((m media) stream)
  (print-unreadable-object (m stream :type t)
    (format stream "~a ~s (~d)" (media-id m) (title m) (year m))))

(defgeneric describe-item (item &key verbose)
  (:documentation "A line about ITEM."))

(defmethod describe-item ((m media) &key verbose)
  (format nil "~a~:[~;, borrowed ~d time~:p~]" (title m) verbose (loans m)))

(defmethod describe-item ((b book) &key verbose)
  (format nil "~a by ~a~@[ [~d pages]~]" (call-next-method) (author b) (and verbose (pages b))))

(defmethod describe-item ((e ebook) &key verbose)
  (format nil "~a (~,1f MB)" (call-next-method e :verbose verbose) (size-mb e)))

(defgeneric loan-period (kind))
(defmethod loan-period ((kind (eql 'book))) 21)
(defmethod loan-period ((kind (eql 'dvd))) 7)
(defmethod loan-period ((kind symbol)) 14)

(defgeneric borrow (item who))
(defmethod borrow ((m media) who)
  (incf (loans m))
  (format t "~a borrows ~a for ~d days~%" who (title m) (loan-period (class-name (class-of m)))))

(defclass patron () ((name :initarg :name :reader name) (email :accessor email)))
(defmethod slot-unbound (class (p patron) (slot (eql 'email)))
  (setf (email p) (format nil "~(~a~)@library.example" (name p))))

(let* ((items (list (make-instance 'book :title "  Dune " :year 1965 :author "Herbert" :pages 412)
                    (make-instance 'dvd :title "Alien" :year 1979 :minutes 117)
                    (make-instance 'ebook :title "SICP" :year 1985 :author "Abelson" :pages 657 :size-mb 4.5)
                    (make-instance 'book :title "Emma" :year 1815 :author "Austen" :pages 474))))
  (dolist (i items) (print i))
  (terpri)
  (borrow (first items) "Ann")
  (borrow (second items) "Bob")
  (borrow (third items) "Cy")
  (borrow (first items) "Dee")
  (dolist (i items)
    (format t "~a~%  ~a~%" (describe-item i) (describe-item i :verbose t)))
  (format t "Counter (class slot): ~d~%" (counter (first items)))
  (format t "Sorted by year: ~{~a~^, ~}~%" (mapcar #'title (sort (copy-list items) #'< :key #'year)))
  (format t "Books: ~{~a~^, ~}~%" (mapcar #'title (remove-if-not (lambda (i) (typep i 'book)) items)))
  (format t "Classes: ~{~(~a~)~^ ~}~%" (mapcar (lambda (i) (class-name (class-of i))) items))
  (format t "Is ebook a media? ~a; subclassp ~a~%" (typep (third items) 'media) (subtypep 'ebook 'media))
  (let ((d (second items)))
    (change-class d 'book :author "Scott" :pages 0)
    (format t "After change-class: ~a, ~a~%" d (describe-item d :verbose t)))
  (handler-case (make-instance 'book :year 2000)
    (error (e) (format t "Error: ~a~%" e))))

(let ((p (make-instance 'patron :name "Zoe")))
  (format t "Email: ~a~%" (email p))
  (format t "Bound now: ~a~%" (slot-boundp p 'email)))
(format t "Loan periods: ~a ~a ~a~%" (loan-period 'book) (loan-period 'dvd) (loan-period 'map))
(format t "Doc: ~a~%" (documentation #'describe-item t))
(format t "Method count: ~d~%" (length (list (find-method #'loan-period '() (list (list 'eql 'book))))))
