;;;; loop.lisp -- the LOOP macro.
(suite "loop")

;;; simple loop
(is-eql (let ((i 0)) (loop (incf i) (when (> i 4) (return i)))) 5)
(is-eql (loop (return)) nil)
(is-equal (multiple-value-list (loop (return (values 1 2)))) '(1 2))

;;; for ... in / on
(is-equal (loop for x in '(1 2 3) collect (* x x)) '(1 4 9))
(is-equal (loop for x in '() collect x) nil)
(is-equal (loop for x in '(1 2 3 4 5) by #'cddr collect x) '(1 3 5))
(is-equal (loop for tail on '(1 2 3) collect tail) '((1 2 3) (2 3) (3)))
(is-equal (loop for (a b) in '((1 2) (3 4)) collect (+ a b)) '(3 7))
(is-equal (loop for (a . b) in '((1 . 2) (3 . 4)) collect (list b a)) '((2 1) (4 3)))
(is-equal (loop as x in '(a b) collect x) '(a b))

;;; for ... from / to / below / downto / by
(is-equal (loop for i from 0 to 4 collect i) '(0 1 2 3 4))
(is-equal (loop for i from 0 below 4 collect i) '(0 1 2 3))
(is-equal (loop for i from 1 to 10 by 3 collect i) '(1 4 7 10))
(is-equal (loop for i from 5 downto 1 collect i) '(5 4 3 2 1))
(is-equal (loop for i from 10 downto 0 by 5 collect i) '(10 5 0))
(is-equal (loop for i below 3 collect i) '(0 1 2))
(is-equal (loop for i upfrom 2 to 4 collect i) '(2 3 4))
(is-equal (loop for i from 3 to 1 collect i) nil)
(is-equal (loop for i from 0 to 1 by 1/2 collect i) '(0 1/2 1))
(is-equal (loop for i from 1 above 8 by 3 collect i) nil)
(is-equal (loop for i from 10 above 7 collect i) '(10 9 8))
(is-equal (loop for i from 10 downto 7 collect i) '(10 9 8 7))

;;; for ... across, = then
(is-equal (loop for c across "abc" collect (char-upcase c)) '(#\A #\B #\C))
(is-equal (loop for x across (vector 1 2 3) sum x) 6)
(is-equal (loop for x across #() collect x) nil)
(is-equal (loop for x = 1 then (* x 2) repeat 5 collect x) '(1 2 4 8 16))
(is-equal (loop for x = 5 repeat 2 collect x) '(5 5))
(is-equal (loop for x in '(a b c) for i from 0 collect (cons i x)) '((0 . a) (1 . b) (2 . c)))
(is-equal (loop for x in '(a b c d) for y in '(1 2) collect (list x y)) '((a 1) (b 2)))
(is-equal (loop for x from 1 to 3 and y = 0 then x collect (list x y)) '((1 0) (2 1) (3 2)))

;;; repeat, while, until
(is-equal (loop repeat 3 collect 'x) '(x x x))
(is-eql (loop repeat 0 count t) 0)
(is-equal (loop for x in '(1 2 3 4 5) while (< x 3) collect x) '(1 2))
(is-equal (loop for x in '(1 2 3 4 5) until (> x 3) collect x) '(1 2 3))
(is-eql (let ((n 0)) (loop while (< n 10) do (incf n)) n) 10)
(is-eql (let ((n 0)) (loop until (>= n 7) do (incf n 2)) n) 8)

;;; accumulation
(is-equal (loop for x in '((1 2) (3) ()) append x) '(1 2 3))
(is-equal (loop for x in '(1 2) nconc (list x x)) '(1 1 2 2))
(is-eql (loop for x in '(1 2 3) sum x) 6)
(is-eql (loop for x in '() sum x) 0)
(is-eql (loop for x in '(1 2 3 4) count (evenp x)) 2)
(is-eql (loop for x in '(3 9 2) maximize x) 9)
(is-eql (loop for x in '(3 9 2) minimize x) 2)
(is-eql (loop for x in '(1.5 2.5) sum x) 4.0)
(is-equal (loop for x in '(1 2 3) collect x into xs finally (return (reverse xs))) '(3 2 1))
(is-equal (loop for x in '(1 2 3 4)
                when (evenp x) collect x into evens
                else collect x into odds
                finally (return (list evens odds)))
          '((2 4) (1 3)))
(is-eql (loop for x in '(1 2 3) sum x into total finally (return (* total 10))) 60)
(is-equal (loop for x in '(5 1 4) maximize x into hi minimize x into lo finally (return (list lo hi)))
          '(1 5))
(is-eql (loop for x in '(a b a) count (eq x 'a) into n finally (return n)) 2)
(is-equal (loop for x in '(1 2 3) collect x collect (- x)) '(1 -1 2 -2 3 -3))
(is-equal (loop for x in '(1 2) append (list x) collect 0) '(1 0 2 0))

;;; do, when, if, unless, else, and
(is-equal (let ((acc '())) (loop for x in '(1 2 3) do (push x acc)) acc) '(3 2 1))
(is-equal (let ((acc '())) (loop for x in '(1 2) do (push x acc) (push (* 10 x) acc)) acc) '(20 2 10 1))
(is-equal (loop for x in '(1 2 3 4 5) when (oddp x) collect x) '(1 3 5))
(is-equal (loop for x in '(1 2 3 4 5) if (oddp x) collect x) '(1 3 5))
(is-equal (loop for x in '(1 2 3 4 5) unless (oddp x) collect x) '(2 4))
(is-equal (loop for x in '(1 2 3 4) if (evenp x) collect x else collect (- x)) '(-1 2 -3 4))
(is-equal (loop for x in '(1 2 3 4) when (evenp x) collect x and collect (* 10 x)) '(2 20 4 40))
(is-equal (loop for x in '(1 2 3 4 5 6)
                when (evenp x) collect x into a
                and count t into n
                finally (return (list a n)))
          '((2 4 6) 3))
(is-equal (loop for x in '(1 nil 3) when x collect it) '(1 3))
(is-equal (loop for x in '(1 2 3) when (> x 1) do (setq x (* x 10)) and collect x) '(20 30))

;;; with, initially, finally, return
(is-eql (loop with a = 10 for x in '(1 2) sum (+ a x)) 23)
(is-equal (loop with a = 1 and b = 2 repeat 1 collect (list a b)) '((1 2)))
(is-eql (loop with acc = 0 for i from 1 to 4 do (incf acc i) finally (return acc)) 10)
(is-eql (loop for i from 1 to 4 finally (return i)) 5)
(is-eql (loop for x in '(1 2 3) do (when (= x 2) (return (* x 100)))) 200)
(is-eql (loop for x in '(1 2 3) when (= x 2) return 'found) 'found)
(is-eql (loop for i from 0 do (when (= i 7) (return i))) 7)
(is-equal (let ((log '())) (loop for i below 2 finally (push 'end log) do (push i log)) log) '(end 1 0))
(is-equal (let ((log '())) (loop initially (push 'start log) for i below 1 do (push i log)) log) '(0 start))
(is-eql (loop for x in '(1 2 3) sum x finally (return 'ignored)) 'ignored)

;;; named loops and loop-finish
(is-equal (loop named outer for i from 0 do (loop for j from 0 to i do (when (= (* i j) 6) (return-from outer (list i j))))) '(3 2))
(is-eql (block nil (loop for i below 3 do (when (= i 1) (return 'early)))) 'early)
(is-equal (loop for x in '(1 2 3 4) collect x do (when (= x 2) (loop-finish))) '(1 2))

;;; always, never, thereis
(is (loop for x in '(2 4) always (evenp x)))
(is (not (loop for x in '(2 5) always (evenp x))))
(is (loop for x in '(1 3) never (evenp x)))
(is-eql (loop for x in '(1 4 5) thereis (and (evenp x) x)) 4)
(is-eql (loop for x in '(1 3) thereis (evenp x)) nil)

;;; nested loops
(is-equal (loop for i from 1 to 3 collect (loop for j from 1 to i collect j)) '((1) (1 2) (1 2 3)))
(is-equal (loop for i from 1 to 3 append (loop for j from 1 to 2 collect (* i j))) '(1 2 2 4 3 6))
(is-eql (loop for i from 1 to 100 sum i) 5050)
(is-eql (loop for i from 1 to 10 when (evenp i) sum i) 30)
(is-equal (loop for (k v) on '(:a 1 :b 2) by #'cddr collect (list v k)) '((1 :a) (2 :b)))

;;; for nil, dotted lists, variables bound twice, typed accumulation and
;;; WITH defaults
(is-equal (let ((i 0)) (loop for nil from 10 to 12 collect (incf i))) '(1 2 3))
(signals type-error (loop for x in '(a . b) collect x))
(signals program-error (macroexpand '(loop for x in '(a) for x in '(b) collect x)))
(signals program-error (macroexpand '(loop with foo = 1 for x in '(c) collect x into foo)))
(signals program-error (macroexpand '(loop for i from 1 to 3 collect i always t)))
(is (= (loop for x from 1 to 10 count (< x 5) into n float finally (return n)) 4))
(is (floatp (loop for x from 1 to 10 count (< x 5) into n float finally (return n))))
(is-equal (loop with (a b c) of-type (fixnum float t) return (list a (floatp b) c)) '(0 t nil))
(is (loop with nil = (return t) return nil))

;; IT is the test's value only in the first clause after the test.
(is-equal (let ((it 'z)) (loop for x in '(a b) when x collect it and collect it)) '(a z b z))
(is-equal (let ((it 'z)) (loop for x in '(a nil c) when x collect it else collect it)) '(a z c))
(is-equal (loop for x in '(a b) when x collect it and when (eq x 'a) collect it) '(a t b))
;; THEREIS gives the loop's value: an accumulation after it is an error too.
(signals program-error (macroexpand '(loop for i from 1 to 3 thereis (> i 2) collect i)))
(signals program-error (macroexpand '(loop for i from 1 to 3 collect i thereis (> i 2))))
(is-eql (loop for x in '(1 2) always (< x 5) thereis (> x 5)) t)
(done)
