;;; Blog URLs.

(defun slugify (title)
  "The URL slug of TITLE (a string or a symbol): trimmed, in lower case,
with hyphens for spaces."
  (string-downcase (substitute "-" #\Space (string-trim " " title))))

(defun post-url (title)
  (format nil "/posts/~a" (slugify title)))
