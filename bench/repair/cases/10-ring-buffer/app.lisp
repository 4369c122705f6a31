;;; The last few events of a device, in a ring buffer of fixed size.

(defstruct (ring (:constructor %make-ring (items)))
  items
  (head 0))

(defun make-ring (size)
  (%make-ring (make-array size :initial-element nil)))

(defun ring-push (ring x)
  (let ((items (ring-items ring)))
    (setf (aref items (ring-head ring)) x
          (ring-head ring) (mod (1+ (ring-head ring)) (length items)))
    x))

(defun ring-ref (ring i)
  "The element at logical index I, where 0 is the oldest element kept and
-1 the newest; any index wraps around the ring."
  (let ((items (ring-items ring)))
    (aref items (rem (+ (ring-head ring) i) (length items)))))

(defvar *events* (make-ring 4))

(dolist (e '(:boot :wifi-up :sync :low-battery :charging :sync))
  (ring-push *events* e))
