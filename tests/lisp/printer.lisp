;;;; printer.lisp -- PRIN1, PRINC, WRITE-TO-STRING and the printer variables.
(suite "printer")

;;; round trips: reading back what PRIN1 wrote gives an EQUAL object
(defvar *readable-data*
  (list 0 1 -1 42 123456789012345678901234567890 (- (expt 2 70)) 1/3 -7/2
        1.5 -0.25 100.0 1.0e20 1.0e-5 0.1
        "" "abc" "with \"quotes\" and \\ backslash" "two words"
        #\a #\Z #\Space #\Newline #\( #\\ #\"
        'foo :key 'x1 '|lower case| '|a b| 'nil 't
        '(1 2 3) '(1 . 2) '(a (b (c . d)) "e" #\f) '((1 2) (3 4)) '(nil nil)))

(is (every (lambda (x) (equal (read-from-string (prin1-to-string x)) x))
           *readable-data*))
(is-equal (read-from-string (prin1-to-string '|a b|)) '|a b|)
(is-equal (read-from-string (prin1-to-string "a\"b")) "a\"b")
(is-equal (read-from-string (prin1-to-string '(a . (b . (c . nil))))) '(a b c))
(is-equal (read-from-string (prin1-to-string 1/3)) 1/3)
(is-eql (read-from-string (prin1-to-string 0.1)) 0.1)
(is-eql (read-from-string (prin1-to-string (/ 1.0 3.0))) (/ 1.0 3.0))
(is-equalp (read-from-string (prin1-to-string (vector 1 "a" #\b))) (vector 1 "a" #\b))

;;; integers and ratios
(is-print 42 "42")
(is-print -42 "-42")
(is-print 0 "0")
(is-print (expt 2 100) "1267650600228229401496703205376")
(is-print (- (expt 10 25)) "-10000000000000000000000000")
(is-print 1/3 "1/3")
(is-print -1/2 "-1/2")
(is-print (/ 4 2) "2")
(is-print (/ 6 4) "3/2")

;;; floats
(is-print 1.5 "1.5")
(is-print 1.0 "1.0")
(is-print -0.25 "-0.25")
(is-print 100.0 "100.0")
(is-print 0.1 "0.1")
(is-print 123456.0 "123456.0")
(is-print 1.0e20 "1.0e20")
(is-print 1.0e100 "1.0e100")
(is-print 1.0e-5 "1.0e-5")
(is-print (float 1/2 1.0) "0.5")
(is-print (/ 1.0 4) "0.25")

;;; strings and characters
(is-print "abc" "\"abc\"")
(is-print "" "\"\"")
(is-print "a\"b" "\"a\\\"b\"")
(is-print "a\\b" "\"a\\\\b\"")
(is-print #\a "#\\a")
(is-print #\A "#\\A")
;; Space is graphic: printed as itself, as SBCL does.
(is-print #\Space "#\\ ")
(is-print (list #\Space #\a) "(#\\  #\\a)")
(is-eql (read-from-string (prin1-to-string #\Space)) #\Space)
(is-print #\Newline "#\\Newline")
(is-print #\( "#\\(")
(is-equal (princ-to-string "a\"b") "a\"b")
(is-equal (princ-to-string #\a) "a")
(is-equal (princ-to-string #\Space) " ")
(is-equal (princ-to-string "") "")

;;; symbols
(is-print 'foo "FOO")
(is-print 'hello-world "HELLO-WORLD")
(is-print :key ":KEY")
(is-print '|a b| "|a b|")
(is-print '|abc| "|abc|")
(is-print nil "NIL")
(is-print t "T")
(is-equal (princ-to-string 'foo) "FOO")
(is-equal (princ-to-string :key) "KEY")
(is-equal (princ-to-string '|a b|) "a b")
(is-equal (symbol-name (read-from-string (prin1-to-string (intern "mixed Case"))))
          "mixed Case")

;;; conses and vectors
(is-print '(1 2 3) "(1 2 3)")
(is-print '(1 . 2) "(1 . 2)")
(is-print '(1 2 . 3) "(1 2 . 3)")
(is-print '(a (b c) ()) "(A (B C) NIL)")
(is-print (list "a" #\b :c) "(\"a\" #\\b :C)")
(is-print (vector 1 2) "#(1 2)")
(is-print (vector) "#()")
(is-print (vector 'a "b" (list 1)) "#(A \"b\" (1))")
(is-print (make-array 3 :initial-element 0) "#(0 0 0)")
(is-equal (princ-to-string '("a" #\b c)) "(a b C)")
(is-equal (princ-to-string (vector "x" 1)) "#(x 1)")

;;; write-to-string and its keyword arguments
(is-equal (write-to-string 42) "42")
(is-equal (write-to-string "s") "\"s\"")
(is-equal (write-to-string "s" :escape nil) "s")
(is-equal (write-to-string 255 :base 16) "FF")
(is-equal (write-to-string 5 :base 2) "101")
(is-equal (write-to-string 255 :base 16 :radix t) "#xFF")
(is-equal (write-to-string '(1 2 3 4 5) :length 3) "(1 2 3 ...)")
(is-equal (write-to-string '(1 (2 (3 (4)))) :level 2) "(1 (2 #))")

;;; *print-base*, *print-escape*
(is-equal (let ((*print-base* 16)) (prin1-to-string 255)) "FF")
(is-equal (let ((*print-base* 2)) (princ-to-string 10)) "1010")
(is-equal (let ((*print-escape* nil)) (write-to-string "q")) "q")

;;; *print-length* and *print-level*
(is-equal (let ((*print-length* 2)) (prin1-to-string '(a b c d))) "(A B ...)")
(is-equal (let ((*print-length* 4)) (prin1-to-string '(a b c d))) "(A B C D)")
(is-equal (let ((*print-length* 0)) (prin1-to-string '(a b))) "(...)")
(is-equal (let ((*print-length* 2)) (prin1-to-string (vector 1 2 3))) "#(1 2 ...)")
(is-equal (let ((*print-length* 3)) (prin1-to-string '(1 (2 3 4 5) 6 7)))
          "(1 (2 3 4 ...) 6 ...)")
(is-equal (let ((*print-level* 1)) (prin1-to-string '(1 (2) 3))) "(1 # 3)")
(is-equal (let ((*print-level* 2)) (prin1-to-string '(1 (2 (3)) 4))) "(1 (2 #) 4)")
(is-equal (let ((*print-level* 0)) (prin1-to-string '(1))) "#")
(is-equal (let ((*print-level* 5)) (prin1-to-string '(1 (2 (3))))) "(1 (2 (3)))")
(is-equal (let ((*print-length* 2) (*print-level* 2))
            (prin1-to-string '((a b c) (d (e f)) g)))
          "((A B ...) (D #) ...)")

;;; *print-circle*
(is-equal (let ((x (list 1)))
            (setf (cdr x) x)
            (let ((*print-circle* t)) (prin1-to-string x)))
          "#1=(1 . #1#)")
(is-equal (let ((s (list 'a)))
            (let ((*print-circle* t)) (prin1-to-string (list s s))))
          "(#1=(A) #1#)")
(is-equal (let ((*print-circle* t)) (prin1-to-string '(1 2 3))) "(1 2 3)")

;;; print, prin1, princ write to *standard-output* and return their argument
(is-equal (with-output-to-string (*standard-output*) (prin1 "x")) "\"x\"")
(is-equal (with-output-to-string (*standard-output*) (princ "x")) "x")
(is-equal (with-output-to-string (*standard-output*) (print 7))
          (concatenate 'string (string #\Newline) "7 "))
(is-equal (with-output-to-string (*standard-output*) (write-string "ab")) "ab")
(is-equal (with-output-to-string (*standard-output*) (write-line "ab"))
          (concatenate 'string "ab" (string #\Newline)))
(is-equal (with-output-to-string (*standard-output*) (terpri)) (string #\Newline))
(is-equal (with-output-to-string (*standard-output*) (princ "a") (fresh-line) (fresh-line))
          (concatenate 'string "a" (string #\Newline)))
(is-equal (with-output-to-string (s) (prin1 'sym s) (princ " " s) (princ 1/2 s))
          "SYM 1/2")
(is-eql (let ((r nil)) (with-output-to-string (*standard-output*) (setq r (prin1 42))) r) 42)
(is-equal (let ((r nil)) (with-output-to-string (*standard-output*) (setq r (princ "s"))) r) "s")


;;; formatter, with-standard-io-syntax, the pretty printer's directives
;;; printing plainly, *print-gensym*
(is-equal (with-output-to-string (s) (funcall (formatter "~a-~a") s 1 2)) "1-2")
(is-equal (funcall (formatter "~a") (make-string-output-stream) 1 2 3) '(2 3))
(is-equal (let ((*print-base* 16) (*print-case* :downcase))
            (with-standard-io-syntax (prin1-to-string (list 'abc 17))))
          "(ABC 17)")
(is (eq (let ((*package* (find-package "KEYWORD"))) (with-standard-io-syntax *package*))
        (find-package "COMMON-LISP-USER")))
(is-equal (with-output-to-string (s) (pprint-fill s '(1 2 3))) "(1 2 3)")
(is-equal (with-output-to-string (s) (pprint-linear s '(a "b") nil)) "A \"b\"")
(is-equal (with-output-to-string (s) (pprint-tabular s '(1 2) t nil 4)) "(1   2)")
(is-equal (with-output-to-string (s) (pprint-tabular s '(1 2))) "(1               2)")
(is (null (pprint-newline :fill (make-string-output-stream))))
(is (null (pprint-indent :block 2 (make-string-output-stream))))
(is (null (pprint-tab :line 1 1 (make-string-output-stream))))
(is-equal (let ((*print-gensym* nil)) (prin1-to-string (make-symbol "G"))) "G")
(is-equal (let ((*print-gensym* t)) (prin1-to-string (make-symbol "G"))) "#:G")

;;; The pretty printer lays data out as SBCL does: fill-style lists, calls
;;; indented under their first argument, a structure one slot to a line
;;; when it does not fit, within *print-right-margin* (80 by default).
(defstruct pp-inv name items counts)
(is-equal (let ((*print-pretty* t)) (prin1-to-string (LOOP FOR I BELOW 40
                                                           COLLECT I)))
          "(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
 29 30 31 32 33 34 35 36 37 38 39)")
(is-equal (let ((*print-pretty* t)) (prin1-to-string '(LIST APPLE BANANA CHERRY
                                                            DATE ELDERBERRY FIG
                                                            GRAPE HONEYDEW KIWI
                                                            LEMON MANGO
                                                            NECTARINE ORANGE)))
          "(LIST APPLE BANANA CHERRY DATE ELDERBERRY FIG GRAPE HONEYDEW KIWI LEMON MANGO
      NECTARINE ORANGE)")
(is-equal (let ((*print-pretty* t)) (prin1-to-string '(VECTOR
                                                       (ALPHA BETA GAMMA DELTA
                                                        EPSILON ZETA ETA THETA
                                                        IOTA KAPPA LAMBDA MU NU
                                                        XI OMICRON)
                                                       1 2)))
          "(VECTOR
 (ALPHA BETA GAMMA DELTA EPSILON ZETA ETA THETA IOTA KAPPA LAMBDA MU NU XI
  OMICRON)
 1 2)")
(is-equal (let ((*print-pretty* t)) (prin1-to-string '((1 2 3 4 5 6 7 8 9 10 11
                                                        12 13 14 15 16 17 18 19
                                                        20 21 22 23 24 25 26 27
                                                        28 29 30)
                                                       5)))
          "((1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
  30)
 5)")
(is-equal (let ((*print-pretty* t)) (prin1-to-string '(20695 1/2 7047 KEY 175
                                                       20695 1/2 7047 KEY 175
                                                       20695 1/2 7047 KEY 175
                                                       1234
                                                       . LONGER-SYMBOL-NAME)))
          "(20695 1/2 7047 KEY 175 20695 1/2 7047 KEY 175 20695 1/2 7047 KEY 175 1234
 . LONGER-SYMBOL-NAME)")
(is-equal (let ((*print-pretty* t)) (prin1-to-string (COERCE
                                                      (LOOP FOR I FROM 1 TO 31
                                                            COLLECT I)
                                                      'VECTOR)))
          "#(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
  30 31)")
(is-equal (let ((*print-pretty* t)) (prin1-to-string (MAKE-PP-INV :NAME
                                                                  "warehouse number one"
                                                                  :ITEMS
                                                                  '(APPLE
                                                                    BANANA
                                                                    CHERRY DATE
                                                                    ELDERBERRY
                                                                    FIG GRAPE)
                                                                  :COUNTS
                                                                  '(1 2 3 4 5 6
                                                                    7 8 9 10))))
          "#S(PP-INV
   :NAME \"warehouse number one\"
   :ITEMS (APPLE BANANA CHERRY DATE ELDERBERRY FIG GRAPE)
   :COUNTS (1 2 3 4 5 6 7 8 9 10))")
(is-equal (let ((*print-pretty* t)) (prin1-to-string (MAKE-ARRAY '(3 10)
                                                                 :INITIAL-ELEMENT
                                                                 12345)))
          "#2A((12345 12345 12345 12345 12345 12345 12345 12345 12345 12345)
    (12345 12345 12345 12345 12345 12345 12345 12345 12345 12345)
    (12345 12345 12345 12345 12345 12345 12345 12345 12345 12345))")
(is-equal (let ((*print-pretty* t)) (prin1-to-string (LOOP FOR I BELOW 12
                                                           COLLECT (CONS I
                                                                         (* I
                                                                            I)))))
          "((0 . 0) (1 . 1) (2 . 4) (3 . 9) (4 . 16) (5 . 25) (6 . 36) (7 . 49) (8 . 64)
 (9 . 81) (10 . 100) (11 . 121))")
(is-equal (let ((*print-pretty* t) (*print-right-margin* 20)) (prin1-to-string '(A
                                                                                 B
                                                                                 C
                                                                                 D
                                                                                 E
                                                                                 F
                                                                                 G
                                                                                 H
                                                                                 I
                                                                                 J
                                                                                 K
                                                                                 L
                                                                                 M
                                                                                 N
                                                                                 O
                                                                                 P)))
          "(A B C D E F G H I
 J K L M N O P)")
(is-equal (let ((*print-pretty* nil)) (prin1-to-string (loop for i below 40 collect i)))
          "(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39)")
(is-equal (let ((*print-pretty* t)) (format nil "Fib: ~a" (loop for a = 0 then b and b = 1 then (+ a b) repeat 25 collect a)))
          "Fib: (0 1 1 2 3 5 8 13 21 34 55 89 144 233 377 610 987 1597 2584 4181 6765
      10946 17711 28657 46368)")

(done)
