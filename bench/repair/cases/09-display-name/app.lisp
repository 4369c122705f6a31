;;; User directory: the name shown next to a user's posts.

(defstruct user first last nickname)

(defvar *users* (make-hash-table))

(setf (gethash 1 *users*) (make-user :first "Ada" :last "Lovelace" :nickname "countess"))
(setf (gethash 2 *users*) (make-user :first "Alan" :last "Turing"))
(setf (gethash 3 *users*) (make-user :first "Grace" :last "Hopper" :nickname "amazing grace"))

(defun display-name (id)
  "The user's nickname when they chose one, cut to 12 characters and with
its first letter in upper case; otherwise their first and last name."
  (let* ((u (gethash id *users*))
         (nick (user-nickname u)))
    (if nick
        (format nil "~a ~a" (user-first u) (user-last u))
        (let ((short (subseq nick 0 (min 12 (length nick)))))
          (concatenate 'string (string (char-upcase (char short 0))) (subseq short 1))))))
