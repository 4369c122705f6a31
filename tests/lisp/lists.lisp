;;;; lists.lisp -- conses and list functions.
(suite "lists")

;;; construction and access
(is-equal (cons 1 2) '(1 . 2))
(is-equal (cons 1 nil) '(1))
(is-equal (list) nil)
(is-equal (list 1 2 3) '(1 2 3))
(is-equal (list* 1 2 '(3 4)) '(1 2 3 4))
(is-equal (list* 1 2) '(1 . 2))
(is-eql (list* 1) 1)
(is-eql (car '(1 2)) 1)
(is-equal (cdr '(1 2)) '(2))
(is-eql (car nil) nil)
(is-eql (cdr nil) nil)
(is-eql (cadr '(1 2 3)) 2)
(is-equal (cddr '(1 2 3)) '(3))
(is-eql (caar '((1) 2)) 1)
(is-equal (cdar '((1 5) 2)) '(5))
(is-eql (caddr '(1 2 3)) 3)
(is-eql (first '(a b c)) 'a)
(is-eql (second '(a b c)) 'b)
(is-eql (third '(a b c)) 'c)
(is-eql (fourth '(a b c)) nil)
(is-equal (rest '(a b c)) '(b c))
(is-eql (nth 0 '(a b c)) 'a)
(is-eql (nth 2 '(a b c)) 'c)
(is-eql (nth 5 '(a b c)) nil)
(is-equal (nthcdr 1 '(a b c)) '(b c))
(is-equal (nthcdr 3 '(a b c)) nil)
(is-equal (nthcdr 0 '(a b c)) '(a b c))
(is-equal (make-list 3 :initial-element 'x) '(x x x))
(is-equal (make-list 2) '(nil nil))

;;; predicates
(is (consp '(1)))
(is (not (consp nil)))
(is (listp nil))
(is (listp '(1)))
(is (not (listp 1)))
(is (atom 1))
(is (atom nil))
(is (not (atom '(1))))
(is (null nil))
(is (not (null '(1))))
(is (endp nil))
(is (not (endp '(1))))

;;; length, last, butlast
(is-eql (length '(1 2 3)) 3)
(is-eql (length nil) 0)
(is-equal (last '(1 2 3)) '(3))
(is-equal (last '(1 2 3) 2) '(2 3))
(is-equal (last '(1 2 . 3)) '(2 . 3))
(is-equal (last nil) nil)
(is-equal (butlast '(1 2 3)) '(1 2))
(is-equal (butlast '(1 2 3) 2) '(1))
(is-equal (butlast '(1 2 3) 5) nil)
(is-equal (butlast nil) nil)

;;; append, nconc, reverse
(is-equal (append '(1 2) '(3) '() '(4 5)) '(1 2 3 4 5))
(is-equal (append) nil)
(is-equal (append '(1) 2) '(1 . 2))
(is-equal (append nil '(1)) '(1))
(is (let ((tail (list 3))) (eq (cdr (append '(1) tail)) tail)))
(is-equal (let ((a (list 1 2))) (append a '(3)) a) '(1 2))
(is-equal (nconc (list 1 2) (list 3) nil (list 4)) '(1 2 3 4))
(is-equal (nconc) nil)
(is-equal (let ((a (list 1 2))) (nconc a (list 3)) a) '(1 2 3))
(is-equal (nconc nil (list 1)) '(1))
(is-equal (reverse '(1 2 3)) '(3 2 1))
(is-equal (reverse nil) nil)
(is-equal (let ((a (list 1 2 3))) (reverse a) a) '(1 2 3))
(is-equal (nreverse (list 1 2 3 4)) '(4 3 2 1))

;;; copying
(is-equal (copy-list '(1 2 3)) '(1 2 3))
(is (let ((l (list 1 2))) (not (eq (copy-list l) l))))
(is-equal (copy-list '(1 . 2)) '(1 . 2))
(is-equal (copy-tree '((1 2) (3 (4)))) '((1 2) (3 (4))))
(is (let ((tr (list (list 1)))) (not (eq (car (copy-tree tr)) (car tr)))))
(is (let ((tr (list (list 1)))) (eq (car (copy-list tr)) (car tr))))

;;; member, assoc, rassoc
(is-equal (member 2 '(1 2 3)) '(2 3))
(is-equal (member 5 '(1 2 3)) nil)
(is-equal (member "b" '("a" "b") :test #'equal) '("b"))
(is-equal (member "b" '("a" "b")) nil)
(is-equal (member 2 '((1) (2) (3)) :key #'car) '((2) (3)))
(is-equal (member 2.0 '(1 2 3) :test #'=) '(2 3))
(is-equal (assoc 'b '((a . 1) (b . 2))) '(b . 2))
(is-equal (assoc 'z '((a . 1))) nil)
(is-equal (assoc "b" '(("a" . 1) ("b" . 2)) :test #'equal) '("b" . 2))
(is-equal (assoc 2 '((1 . a) nil (2 . b))) '(2 . b))
(is-equal (rassoc 2 '((a . 1) (b . 2))) '(b . 2))
(is-equal (rassoc "x" '((a . "x")) :test #'string=) '(a . "x"))

;;; mapping
(is-equal (mapcar #'1+ '(1 2 3)) '(2 3 4))
(is-equal (mapcar #'+ '(1 2 3) '(10 20)) '(11 22))
(is-equal (mapcar #'list '(a b) '(1 2) '(x y)) '((a 1 x) (b 2 y)))
(is-equal (mapcar #'car nil) nil)
(is-equal (let ((acc '())) (mapc (lambda (x) (push x acc)) '(1 2 3)) acc) '(3 2 1))
(is-equal (mapc #'identity '(1 2)) '(1 2))
(is-equal (mapcan (lambda (x) (if (evenp x) (list x x) nil)) '(1 2 3 4)) '(2 2 4 4))
(is-equal (mapcan #'list '(1 2) '(a b)) '(1 a 2 b))
(is-equal (maplist #'identity '(1 2 3)) '((1 2 3) (2 3) (3)))
(is-equal (maplist (lambda (x y) (+ (car x) (car y))) '(1 2) '(10 20)) '(11 22))


;;; property lists
(is-eql (getf '(:a 1 :b 2) :b) 2)
(is-eql (getf '(:a 1 :b 2) :c) nil)
(is-eql (getf '(:a 1) :c 'default) 'default)
(is-equal (let ((pl (list :a 1))) (setf (getf pl :b) 2) (list (getf pl :a) (getf pl :b))) '(1 2))
(is-equal (let ((pl (list :a 1 :b 2))) (setf (getf pl :a) 10) pl) '(:a 10 :b 2))

;;; destructive modification
(is-equal (let ((l (list 1 2 3))) (setf (car l) 10) l) '(10 2 3))
(is-equal (let ((l (list 1 2 3))) (setf (cdr l) nil) l) '(1))
(is-equal (let ((l (list 1 2 3))) (setf (nth 1 l) 'b) l) '(1 b 3))
(is-equal (let ((l (list 1 2 3))) (setf (second l) 'two (third l) 'three) l) '(1 two three))
(is-equal (let ((l (list (list 1 2)))) (setf (cadar l) 5) l) '((1 5)))

;;; push, pop, stack use
(is-equal (let ((s '())) (push 1 s) (push 2 s) s) '(2 1))
(is-equal (let ((s (list 1 2))) (list (pop s) s)) '(1 (2)))
(is-equal (let ((s (list 1 2))) (pushnew 1 s) s) '(1 2))
(is-equal (let ((s (list 1 2))) (pushnew 3 s) s) '(3 1 2))

;;; equality of lists
(is (equal '(1 (2 "x")) (list 1 (list 2 "x"))))
(is (not (eq (list 1) (list 1))))
(is (not (equal '(1 2) '(1 2 3))))
(is (equalp '(1 "ABC") '(1 "abc")))

;;; errors
(signals type-error (car 1))
(signals type-error (cdr "abc"))
(signals type-error (nth 0 5))
(signals type-error (length 5))
(signals type-error (mapcar #'car '(1 2)))
(signals error (nth -1 '(1 2)))

;; nconc does not walk its last argument, which may be an earlier one
(is-equal (let ((s (list 'a 'b))) (nconc s s) (list (first s) (second s) (third s) (eq (cddr s) s)))
          '(a b a t))
;; NRECONC of a dotted list: the type-error's datum is the tail that is not a list.
(is-equal (handler-case (nreconc (cons 'a 'b) (list 'z))
            (type-error (e) (list (type-error-datum e) (typep (type-error-datum e) (type-error-expected-type e)))))
          '(b nil))

(done)
