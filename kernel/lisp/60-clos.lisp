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
