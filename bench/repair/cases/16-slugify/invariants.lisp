(string= (slugify "Lisp") "lisp")
(string= (post-url "news") "/posts/news")
