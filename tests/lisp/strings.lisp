;;;; strings.lisp -- characters and strings.
(suite "strings")

;;; characters
(is-eql (char-code #\A) 65)
(is-eql (char-code #\a) 97)
(is-eql (char-code #\Space) 32)
(is-eql (char-code #\Newline) 10)
(is-eql (code-char 65) #\A)
(is-eql (code-char 48) #\0)
(is-eql (code-char (char-code #\z)) #\z)
(is-eql (char-upcase #\a) #\A)
(is-eql (char-upcase #\A) #\A)
(is-eql (char-upcase #\1) #\1)
(is-eql (char-downcase #\Q) #\q)
(is (char= #\a #\a))
(is (not (char= #\a #\A)))
(is (char= #\x #\x #\x))
(is (char< #\a #\b))
(is (char< #\a #\b #\c))
(is (not (char< #\b #\a)))
(is (not (char< #\a #\a)))
(is (char< #\A #\a))
(is (char< #\0 #\9))
(is (eql #\a (char "abc" 0)))
(is (characterp #\a))
(is (not (characterp "a")))

;;; string comparison
(is (string= "abc" "abc"))
(is (not (string= "abc" "ABC")))
(is (not (string= "abc" "abcd")))
(is (string= "" ""))
(is (string= 'abc "ABC"))
(is (string= "xabcx" "abc" :start1 1 :end1 4))
(is (string= "abc" "zbc" :start1 1 :start2 1))
(is-eql (string< "abc" "abd") 2)
(is-eql (string< "ab" "abc") 2)
(is-eql (string< "abc" "abc") nil)
(is-eql (string< "b" "a") nil)
(is-eql (string< "" "a") 0)
(is (string< "apple" "banana"))
(is (string-equal "ABC" "abc"))
(is (string-equal "Hello" "hELLO"))
(is (not (string-equal "abc" "abd")))
(is (string-equal 'foo "foo"))

;;; case conversion
(is-equal (string-upcase "hello") "HELLO")
(is-equal (string-upcase "Hello World 42") "HELLO WORLD 42")
(is-equal (string-downcase "HeLLo") "hello")
(is-equal (string-upcase "") "")
(is-equal (string-upcase "hello" :start 1 :end 3) "hELlo")
(is-equal (string-downcase 'foo) "foo")
(is-equal (let ((s "abc")) (string-upcase s) s) "abc")

;;; trimming
(is-equal (string-trim " " "  ab  ") "ab")
(is-equal (string-trim " " "ab") "ab")
(is-equal (string-trim " " "   ") "")
(is-equal (string-trim '(#\Space #\x) "x ab x") "ab")
(is-equal (string-trim "-*" "--*a-b*--") "a-b")

;;; string, char, schar, length
(is-equal (string 'abc) "ABC")
(is-equal (string #\a) "a")
(is-equal (string "xy") "xy")
(is-eql (char "hello" 1) #\e)
(is-eql (schar "hello" 4) #\o)
(is-eql (length "hello") 5)
(is-eql (length "") 0)
(is-equal (let ((s (subseq "abc" 0))) (setf (char s 0) #\z) s) "zbc")
(is-equal (let ((s (subseq "abc" 0))) (setf (schar s 2) #\Z) s) "abZ")
(is (stringp "abc"))
(is (not (stringp 'abc)))
(is (not (stringp #\a)))

;;; subseq, search, concatenate
(is-equal (subseq "hello" 1 3) "el")
(is-equal (subseq "hello" 2) "llo")
(is-equal (subseq "hello" 5) "")
(is-equal (subseq "hello" 0 0) "")
(is-eql (search "lo" "hello") 3)
(is-eql (search "l" "hello") 2)
(is-eql (search "z" "hello") nil)
(is-eql (search "" "hello") 0)
(is-eql (search "l" "hello" :from-end t) 3)
(is-eql (search "LL" "hello" :test (lambda (a b) (char= (char-upcase a) (char-upcase b)))) 2)
(is-eql (search "l" "hello" :start2 3) 3)
(is-equal (concatenate 'string "ab" "cd" "") "abcd")
(is-equal (concatenate 'string) "")
(is-equal (concatenate 'string "a" '(#\b #\c) (vector #\d)) "abcd")
(is-equal (concatenate 'list "ab") '(#\a #\b))

;;; strings as sequences
(is-equal (reverse "abc") "cba")
(is-eql (position #\l "hello") 2)
(is-eql (find #\e "hello") #\e)
(is-eql (count #\l "hello") 2)
(is-equal (remove #\l "hello") "heo")
(is-equal (coerce "abc" 'list) '(#\a #\b #\c))
(is-equal (coerce '(#\x #\y) 'string) "xy")
(is-equal (map 'string #'char-upcase "abc") "ABC")
(is-equal (sort (subseq "cba" 0) #'char<) "abc")
(is-eql (elt "abc" 2) #\c)
(is (every #'characterp "abc"))

;;; equality
(is (equal "abc" "abc"))
(is (not (equal "abc" "ABC")))
(is (equalp "abc" "ABC"))
(is (not (eq "abc" (subseq "abc" 0))))
(is (not (eql "abc" (subseq "abc" 0))))

;;; symbols and strings
(is-equal (symbol-name 'hello) "HELLO")
(is-eql (intern "SF-INTERNED-SYM") 'sf-interned-sym)
(is-equal (symbol-name (intern "lower")) "lower")
(is (eq (intern "ABC") (intern "ABC")))

;;; conversion to and from strings
(is-equal (write-to-string 12) "12")
(is-equal (prin1-to-string "q") "\"q\"")
(is-equal (princ-to-string 'abc) "ABC")
(is-eql (parse-integer "  99") 99)
(is-equal (with-output-to-string (s) (write-string "ab" s) (write-string "cd" s)) "abcd")
(is-equal (with-output-to-string (s) (dotimes (i 3) (princ i s))) "012")
(is-equal (format nil "~a-~a" "x" 1) "x-1")

;;; fill-pointer strings
(is-equal (let ((s (make-array 0 :element-type 'character :adjustable t :fill-pointer 0)))
            (vector-push-extend #\a s)
            (vector-push-extend #\b s)
            (coerce s 'list))
          '(#\a #\b))
(is-eql (let ((s (make-array 0 :element-type 'character :adjustable t :fill-pointer 0)))
          (dotimes (i 100) (vector-push-extend #\x s))
          (length s))
        100)

;;; errors
(signals error (char "abc" 5))
(signals error (subseq "abc" 2 5))
(signals error (subseq "abc" 2 1))
(signals type-error (char-code "a"))
(signals type-error (char-upcase "a"))
(signals type-error (string-upcase 5))
(signals type-error (string= 1 "a"))
(signals type-error (code-char 'a))


;;; character of a designator
(is-equal (list (character #\a) (character "b") (character 'c)) '(#\a #\b #\C))
(signals type-error (character "ab"))
(signals type-error (character 65))

;; char ignores a fill pointer: it reaches every element below the total size
(is-equal (let ((s (make-array 6 :element-type 'character :initial-contents "abcdef" :fill-pointer 4)))
            (setf (char s 5) #\X)
            (list (char s 4) (progn (setf (fill-pointer s) 6) s)))
          '(#\e "abcdeX"))
(signals error (char (make-array 3 :element-type 'character :initial-contents "abc" :fill-pointer 1) 3))

;;; type-of a character: STANDARD-CHAR, BASE-CHAR (other ASCII); beyond
;;; ASCII jiti says CHARACTER (every character is a base-char here), SBCL
;;; EXTENDED-CHAR
(is-equal (mapcar #'type-of (list #\a #\Space #\Newline #\Tab))
          '(standard-char standard-char standard-char base-char))

;; The graphic ASCII characters have their Unicode names, as in SBCL.
(is-equal (list (char-name #\&) (char-name #\a) (char-name #\0)) '("AMPERSAND" "LATIN_SMALL_LETTER_A" "DIGIT_ZERO"))
(is-eql (name-char "ampersand") #\&)
(is-eql (read-from-string "#\\LATIN_SMALL_LETTER_A") #\a)
(is-equal (prin1-to-string #\a) "#\\a")
(done)
