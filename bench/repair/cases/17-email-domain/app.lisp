;;; Mailing: which domains our users' email addresses are at.

(defvar *emails* (make-hash-table))

(setf (gethash 1 *emails*) "ada@example.org")
(setf (gethash 2 *emails*) "alan@bletchley.example")
(setf (gethash 3 *emails*) "grace@navy.example")

(defun email-domain (user-id)
  "The domain of the user's email address, or NIL when we have no address
for the user."
  (let ((email (gethash user-id *emails*)))
    (subseq email (1+ (position #\@ email)))))

(defun users-at (domain ids)
  (remove-if-not (lambda (id) (equal (email-domain id) domain)) ids))
