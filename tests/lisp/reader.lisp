;;;; reader.lisp -- the Lisp reader, through READ-FROM-STRING.
(suite "reader")

;;; integers and bignums
(is-eql (read-from-string "123") 123)
(is-eql (read-from-string "-42") -42)
(is-eql (read-from-string "+7") 7)
(is-eql (read-from-string "0") 0)
(is-eql (read-from-string "-0") 0)
(is-eql (read-from-string "12.") 12)
(is (integerp (read-from-string "12.")))
(is-eql (read-from-string "100000000000000000000") (expt 10 20))
(is-eql (read-from-string "-100000000000000000000") (- (expt 10 20)))
(is (integerp (read-from-string "123456789012345678901234567890")))
(is-eql (read-from-string "18446744073709551616") (expt 2 64))

;;; ratios, normalised
(is-eql (read-from-string "1/3") (/ 1 3))
(is-eql (read-from-string "2/4") (/ 1 2))
(is-eql (read-from-string "4/2") 2)
(is (integerp (read-from-string "4/2")))
(is-eql (read-from-string "-6/8") (/ -3 4))
(is-eql (read-from-string "0/5") 0)
(is-eql (denominator (read-from-string "10/4")) 2)

;;; floats
(is-eql (read-from-string "1.5") 1.5)
(is-eql (read-from-string "-0.25") -0.25)
(is-eql (read-from-string ".5") 0.5)
(is-eql (read-from-string "1e3") 1000.0)
(is-eql (read-from-string "1.5e-3") 0.0015)
(is-eql (read-from-string "2.5E2") 250.0)
(is (floatp (read-from-string "1.0")))
(is (floatp (read-from-string "1e0")))
(is-eql (read-from-string "1.0d0") 1.0)

;;; strings
(is-equal (read-from-string "\"abc\"") "abc")
(is-equal (read-from-string "\"\"") "")
(is-eql (length (read-from-string "\"a\\\"b\"")) 3)
(is-eql (char (read-from-string "\"a\\\"b\"") 1) #\")
(is-eql (length (read-from-string "\"a\\\\b\"")) 3)
(is-eql (char (read-from-string "\"a\\\\b\"") 1) #\\)
(is-equal (read-from-string "\"a\\bc\"") "abc")
(is (stringp (read-from-string "\"x y\"")))
(is-equal (read-from-string "\"two
lines\"") (concatenate 'string "two" (string #\Newline) "lines"))

;;; characters
(is-eql (read-from-string "#\\a") #\a)
(is-eql (read-from-string "#\\A") #\A)
(is (not (eql (read-from-string "#\\a") #\A)))
(is-eql (read-from-string "#\\Space") (code-char 32))
(is-eql (read-from-string "#\\space") #\Space)
(is-eql (read-from-string "#\\Newline") (code-char 10))
(is-eql (read-from-string "#\\(") #\()
(is-eql (read-from-string "#\\)") #\))
(is-eql (read-from-string "#\\;") #\;)
(is-eql (read-from-string "#\\\\") #\\)
(is-eql (read-from-string "#\\0") #\0)
(is (characterp (read-from-string "#\\x")))
;;; the names char-name gives read back, the ASCII controls' too
(is-eql (read-from-string "#\\Soh") (code-char 1))
(is-eql (read-from-string "#\\rubout") (code-char 127))
(is (loop for i below 128
          always (eql (read-from-string (format nil "~s" (code-char i))) (code-char i))))

;;; symbols
(is-eql (read-from-string "foo") 'foo)
(is-equal (symbol-name (read-from-string "fooBar")) "FOOBAR")
(is-equal (symbol-name (read-from-string "|foo bar|")) "foo bar")
(is-equal (symbol-name (read-from-string "|abc|")) "abc")
(is-equal (symbol-name (read-from-string "a|b c|d")) "Ab cD")
(is-equal (symbol-name (read-from-string "\\a")) "a")
(is-equal (symbol-name (read-from-string "a\\ b")) "A B")
(is-eql (read-from-string "|FOO|") 'foo)
(is-equal (symbol-name (read-from-string "1+")) "1+")
(is (symbolp (read-from-string "1+")))
(is (symbolp (read-from-string "+")))
(is (symbolp (read-from-string "-")))
(is (symbolp (read-from-string "*foo*")))
(is-eql (read-from-string "nil") nil)
(is-eql (read-from-string "()") nil)
(is-eql (read-from-string "t") t)

;;; keywords
(is-eql (read-from-string ":key") :key)
(is (keywordp (read-from-string ":test")))
(is-equal (symbol-name (read-from-string ":abc")) "ABC")
(is-eql (read-from-string ":Key") :KEY)

;;; quote, function, backquote
(is-equal (read-from-string "'x") '(quote x))
(is-equal (read-from-string "'(1 2)") '(quote (1 2)))
(is-equal (read-from-string "''a") '(quote (quote a)))
(is-equal (read-from-string "#'car") '(function car))
(is-equal (read-from-string "#'(lambda (x) x)") '(function (lambda (x) x)))
(is-equal (eval (read-from-string "`(1 ,(+ 1 1) ,@(list 3 4))")) '(1 2 3 4))
(is-equal (eval (read-from-string "`(a . ,(+ 1 2))")) '(a . 3))
(is-equal (eval (read-from-string "`x")) 'x)

;;; comments
(is-eql (read-from-string "; a comment
 42") 42)
(is-eql (read-from-string "#| block |# 7") 7)
(is-eql (read-from-string "#| a #| nested |# b |# 8") 8)
(is-equal (read-from-string "(1 ; one
  2)") '(1 2))
(is-equal (read-from-string "(1 #| two |# 3)") '(1 3))

;;; lists and dotted pairs
(is-equal (read-from-string "(1 2 3)") '(1 2 3))
(is-equal (read-from-string "(1 . 2)") (cons 1 2))
(is-equal (read-from-string "(1 2 . 3)") (cons 1 (cons 2 3)))
(is-equal (read-from-string "(a . (b c))") '(a b c))
(is-equal (read-from-string "(a (b (c)) d)") '(a (b (c)) d))
(is-equal (read-from-string "  ( a   b )  ") '(a b))
(is-equal (read-from-string "(\"s\" #\\c 1.5 :k)") '("s" #\c 1.5 :k))

;;; vectors
(is-equalp (read-from-string "#(1 2 3)") (vector 1 2 3))
(is (vectorp (read-from-string "#(a b)")))
(is-eql (length (read-from-string "#()")) 0)
(is-eql (aref (read-from-string "#(a (b) \"c\")") 0) 'a)
(is-equal (aref (read-from-string "#(a (b) \"c\")") 1) '(b))

;;; radix syntax
(is-eql (read-from-string "#b101") 5)
(is-eql (read-from-string "#B101") 5)
(is-eql (read-from-string "#b-101") -5)
(is-eql (read-from-string "#x1F") 31)
(is-eql (read-from-string "#xff") 255)
(is-eql (read-from-string "#o17") 15)
(is-eql (read-from-string "#36rZ") 35)
(is-eql (read-from-string "#36r10") 36)
(is-eql (read-from-string "#2r1111") 15)
(is-eql (read-from-string "#x10/2") 8)
(is-eql (read-from-string "#x10000000000000000") (expt 2 64))

;;; read conditionals
(is-equal (read-from-string "(#+(or) 1 2)") '(2))
(is-equal (read-from-string "(#-(or) 1 2)") '(1 2))
(is-equal (read-from-string "(#+(and) a b)") '(a b))
#+jiti (is-equal (read-from-string "(#+jiti 1 #-jiti 2)") '(1))

;;; multiple values and arguments of READ-FROM-STRING
(is-eql (nth-value 1 (read-from-string "(a)")) 3)
(is-eql (nth-value 1 (read-from-string "42")) 2)
(is-eql (read-from-string "" nil :eof) :eof)
(is-eql (read-from-string "   " nil 'none) 'none)
(is-eql (read-from-string "abc def" t nil :start 4) 'def)
(is-equal (multiple-value-list (read-from-string "1 2")) '(1 2))

;;; errors
(signals reader-error (read-from-string ")"))
(signals end-of-file (read-from-string "(1 2"))
(signals end-of-file (read-from-string ""))
(signals end-of-file (read-from-string "\"abc"))
(signals end-of-file (read-from-string "'"))
(signals end-of-file (read-from-string "#(1 2"))
(signals reader-error (read-from-string "(1 . 2 3)"))
(signals reader-error (read-from-string "( . 2)"))
(signals error (read-from-string "#<foo>"))
(is-eql (read-from-string "#.(+ 1 2)") 3)
(is-eql (let ((*read-eval* nil))
          (handler-case (read-from-string "#.(+ 1 2)")
            (reader-error () :refused)))
        :refused)


;;; *read-suppress*: every object reads as NIL
(is (null (let ((*read-suppress* t)) (read-from-string "(a b c)"))))
(is (null (let ((*read-suppress* t)) (read-from-string "no-such-package:x"))))
(is-eql (let ((*read-suppress* t)) (nth-value 1 (read-from-string "#(1 2) rest"))) 7)

;; A symbol's name keeps every character of the string it was made from,
;; a surrogate code point too, whether interned or read.
(let ((s (string (code-char #xD800))))
  (is-eql (char-code (char (symbol-name (intern s)) 0)) #xD800)
  (is (eq (intern s) (read-from-string (concatenate 'string "|" s "|"))))
  (is-eql (char-code (char (symbol-name (read-from-string (concatenate 'string "A" s))) 1)) #xD800))
(done)
