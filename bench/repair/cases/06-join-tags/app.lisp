;;; Blog: posts and the tags shown under their titles.

(defstruct post title tags)

(defun join-tags (tags)
  "The tags separated by commas: (\"lisp\" \"repl\") gives \"lisp,repl\"."
  (reduce (lambda (a b) (concatenate 'string a #\, b)) tags))

(defun post-header (post)
  (format nil "~a [~a]" (post-title post) (join-tags (post-tags post))))

(defvar *posts*
  (list (make-post :title "Hello" :tags '("news"))
        (make-post :title "Live worlds" :tags '("lisp" "repl"))))
