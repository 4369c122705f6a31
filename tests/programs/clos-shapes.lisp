;;; Shapes: areas, perimeters, scaling, sorting and a report table.
(defclass shape ()
  ((name :initarg :name :reader shape-name)))

(defclass circle (shape)
  ((radius :initarg :radius :accessor radius)))

(defclass rectangle (shape)
  ((width :initarg :width :accessor width)
   (height :initarg :height :accessor height)))

(defclass square (rectangle) ()
  (:default-initargs :name "square"))

(defmethod initialize-instance :after ((s square) &key side)
  (when side
    (setf (width s) side (height s) side)))

(defgeneric area (shape)
  (:documentation "Area of SHAPE."))
(defgeneric perimeter (shape))
(defgeneric scale (shape factor))

(defmethod area ((c circle)) (* pi (radius c) (radius c)))
(defmethod area ((r rectangle)) (* (width r) (height r)))
(defmethod perimeter ((c circle)) (* 2 pi (radius c)))
(defmethod perimeter ((r rectangle)) (* 2 (+ (width r) (height r))))

(defmethod scale ((c circle) factor)
  (make-instance 'circle :name (shape-name c) :radius (* (radius c) factor)))
(defmethod scale ((r rectangle) factor)
  (make-instance (class-of r) :name (shape-name r)
                 :width (* (width r) factor) :height (* (height r) factor)))

(defmethod print-object ((s shape) stream)
  (format stream "#<~a ~a area=~,3f>" (type-of s) (shape-name s) (area s)))

(defun make-shapes ()
  (list (make-instance 'circle :name "c1" :radius 1)
        (make-instance 'rectangle :name "r1" :width 3 :height 4)
        (make-instance 'square :side 2)
        (make-instance 'circle :name "c2" :radius 0.5)))

(let ((shapes (make-shapes)))
  (format t "~&~10a ~10a ~10a~%" "name" "area" "perimeter")
  (dolist (s shapes)
    (format t "~10a ~10,3f ~10,3f~%" (shape-name s) (area s) (perimeter s)))
  (format t "~%Sorted by area:~%")
  (dolist (s (sort (copy-list shapes) #'< :key #'area))
    (format t "  ~a~%" s))
  (format t "~%Scaled x2:~%")
  (dolist (s (mapcar (lambda (s) (scale s 2)) shapes))
    (print s))
  (terpri)
  (format t "Total area: ~,4f~%" (reduce #'+ (mapcar #'area shapes)))
  (format t "Squares: ~a~%" (count-if (lambda (s) (typep s 'square)) shapes))
  (format t "Rectangles (incl. squares): ~a~%" (count-if (lambda (s) (typep s 'rectangle)) shapes))
  (format t "~a~%" (subtypep 'square 'shape)))
