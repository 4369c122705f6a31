;;;; 60-clos.lisp — the CLOS macros.  defclass, defgeneric and defmethod
;;;; hand the whole form to the kernel (class.c, generic.c), which parses it
;;;; itself; the rest are the standard macros built on slot-value and
;;;; symbol-macrolet.

(defmacro defclass (&whole form name superclasses slots &rest options)
  (declare (ignore name superclasses slots options))
  `(%defclass ',form))

(defmacro defgeneric (&whole form name lambda-list &rest options)
  (declare (ignore name lambda-list options))
  `(%defgeneric ',form))

(defmacro defmethod (&whole form name &rest rest)
  (declare (ignore name rest))
  `(%defmethod ',form))

(defmacro with-slots (slots instance &body body)
  (let ((obj (gensym "INSTANCE")))
    `(let ((,obj ,instance))
       (declare (ignorable ,obj))
       (symbol-macrolet ,(mapcar (lambda (s)
                                   (if (consp s)
                                       `(,(car s) (slot-value ,obj ',(car (cdr s))))
                                       `(,s (slot-value ,obj ',s))))
                                 slots)
         ,@body))))

(defmacro with-accessors (accessors instance &body body)
  (let ((obj (gensym "INSTANCE")))
    `(let ((,obj ,instance))
       (declare (ignorable ,obj))
       (symbol-macrolet ,(mapcar (lambda (a) `(,(car a) (,(car (cdr a)) ,obj))) accessors)
         ,@body))))

(defmacro print-unreadable-object ((object stream &key type identity) &body body)
  `(%print-unreadable-object ,object ,stream ,type ,identity
                             ,(if body `(lambda () ,@body) nil)))

;; (describe 'name) says what a symbol names, as the standard's describe
;; does: a variable or constant and its value, a function with its lambda
;; list, a macro or special operator, their documentation, a class.
(defmethod describe-object ((object symbol) stream)
  (call-next-method)
  (when (boundp object)
    (format stream "~%~s names a ~:[special variable~;constant~]:~%  Value: ~s~%"
            object (constantp object) (symbol-value object))
    (let ((doc (documentation object 'variable)))
      (when doc (format stream "  Documentation:~%    ~a~%" doc))))
  (cond ((special-operator-p object)
         (format stream "~%~s names a special operator.~%" object))
        ((macro-function object)
         (format stream "~%~s names a macro.~%" object))
        ((fboundp object)
         (let ((lambda (function-lambda-expression (fdefinition object))))
           (format stream "~%~s names a ~:[built-in~;defined~] function:~%" object lambda)
           (when lambda (format stream "  Lambda-list: ~s~%" (second lambda))))))
  (when (or (macro-function object) (fboundp object))
    (let ((doc (documentation object 'function)))
      (when doc (format stream "  Documentation:~%    ~a~%" doc))))
  (let ((class (find-class object nil)))
    (when class (format stream "~%~s names the class ~s.~%" object class)))
  (values))
