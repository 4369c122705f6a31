;;;; format.lisp -- FORMAT directives.
(suite "format")

(defun nl (&rest parts)
  "Concatenate strings and characters into one string."
  (apply #'concatenate 'string (mapcar (lambda (p) (if (characterp p) (string p) p)) parts)))

;;; destinations
(is-equal (format nil "hello") "hello")
(is-equal (with-output-to-string (*standard-output*) (format t "hi ~a" 1)) "hi 1")
(is-eql (let ((r 'unset)) (with-output-to-string (*standard-output*) (setq r (format t "x"))) r) nil)
(is-equal (with-output-to-string (s) (format s "~d-~d" 1 2)) "1-2")
(is-equal (format nil "") "")

;;; ~a ~s
(is-equal (format nil "~a" "str") "str")
(is-equal (format nil "~s" "str") "\"str\"")
(is-equal (format nil "~a" 'sym) "SYM")
(is-equal (format nil "~s" :kw) ":KW")
(is-equal (format nil "~a" nil) "NIL")
(is-equal (format nil "~a" '(1 "two" #\3)) "(1 two 3)")
(is-equal (format nil "~s" '(1 "two" #\3)) "(1 \"two\" #\\3)")
(is-equal (format nil "~a and ~a" 1 2) "1 and 2")
(is-equal (format nil "~a" 1.5) "1.5")
(is-equal (format nil "~a" 1/2) "1/2")
(is-equal (format nil "~s" #\a) "#\\a")
(is-equal (format nil "~a" #\a) "a")

;;; padding of ~a ~s
(is-equal (format nil "~5a|" "ab") "ab   |")
(is-equal (format nil "~5@a|" "ab") "   ab|")
(is-equal (format nil "~2a|" "abcd") "abcd|")
(is-equal (format nil "~6s|" "ab") "\"ab\"  |")

;;; ~d ~b ~o ~x and padding
(is-equal (format nil "~d" 42) "42")
(is-equal (format nil "~d" -42) "-42")
(is-equal (format nil "~d" (expt 2 70)) "1180591620717411303424")
(is-equal (format nil "~5d" 42) "   42")
(is-equal (format nil "~5,'0d" 42) "00042")
(is-equal (format nil "~2d" 12345) "12345")
(is-equal (format nil "~@d" 5) "+5")
(is-equal (format nil "~@d" -5) "-5")
(is-equal (format nil "~:d" 1234567) "1,234,567")
(is-equal (format nil "~:d" 123) "123")
(is-equal (format nil "~d" 'foo) "FOO")
(is-equal (format nil "~x" 255) "FF")
(is-equal (format nil "~b" 5) "101")
(is-equal (format nil "~o" 8) "10")
(is-equal (format nil "~8,'0b" 5) "00000101")
(is-equal (format nil "~4,'0x" 255) "00FF")
(is-equal (format nil "~x" -255) "-FF")

;;; ~r
(is-equal (format nil "~r" 42) "forty-two")
(is-equal (format nil "~r" 0) "zero")
(is-equal (format nil "~r" 7) "seven")
(is-equal (format nil "~r" 100) "one hundred")
(is-equal (format nil "~r" 1234) "one thousand two hundred thirty-four")
(is-equal (format nil "~r" -3) "negative three")
(is-equal (format nil "~:r" 1) "first")
(is-equal (format nil "~:r" 2) "second")
(is-equal (format nil "~:r" 42) "forty-second")
(is-equal (format nil "~:r" 11) "eleventh")
(is-equal (format nil "~@r" 1999) "MCMXCIX")
(is-equal (format nil "~@r" 4) "IV")
(is-equal (format nil "~@r" 2024) "MMXXIV")
(is-equal (format nil "~2r" 5) "101")
(is-equal (format nil "~16r" 255) "FF")
(is-equal (format nil "~36r" 35) "Z")

;;; ~f ~e ~$
(is-equal (format nil "~f" 1.5) "1.5")
(is-equal (format nil "~,2f" 3.14159) "3.14")
(is-equal (format nil "~,2f" 0.5) "0.50")
(is-equal (format nil "~,3f" 2) "2.000")
(is-equal (format nil "~8,3f" 3.14159) "   3.142")
(is-equal (format nil "~,2f" -1.25) "-1.25")
(is-equal (format nil "~,1f" 10.26) "10.3")
(is-equal (format nil "~f" 100) "100.0")
(is-equal (format nil "~,2e" 1234.5) "1.23e+3")
(is-equal (format nil "~$" 3.14159) "3.14")
(is-equal (format nil "~$" 2) "2.00")
(is-equal (format nil "~$" 0.5) "0.50")
(is-equal (format nil "~3$" 1.5) "1.500")
(is-equal (format nil "~$" 1234.5) "1234.50")

;;; ~% ~& ~~ and tilde-newline
(is-equal (format nil "a~%b") (nl "a" #\Newline "b"))
(is-equal (format nil "~2%") (nl #\Newline #\Newline))
(is-equal (format nil "~&a") "a")
(is-equal (format nil "a~&b") (nl "a" #\Newline "b"))
(is-equal (format nil "a~%~&b") (nl "a" #\Newline "b"))
(is-equal (format nil "~~") "~")
(is-equal (format nil "100~~") "100~")
(is-equal (format nil "a~
                       b") "ab")

;;; ~c
(is-equal (format nil "~c" #\a) "a")
(is-equal (format nil "~c~c" #\x #\y) "xy")
(is-equal (format nil "~:c" #\Space) "Space")
(is-equal (format nil "~@c" #\a) "#\\a")

;;; ~p
(is-equal (format nil "~d item~:p" 1) "1 item")
(is-equal (format nil "~d item~:p" 2) "2 items")
(is-equal (format nil "~d item~:p" 0) "0 items")
(is-equal (format nil "~d pon~:@p" 1) "1 pony")
(is-equal (format nil "~d pon~:@p" 3) "3 ponies")
(is-equal (format nil "cat~p" 2) "cats")
(is-equal (format nil "cat~p" 1) "cat")

;;; ~( ~)
(is-equal (format nil "~(~a~)" "HeLLo World") "hello world")
(is-equal (format nil "~:@(~a~)" "hello") "HELLO")
(is-equal (format nil "~:(~a~)" "hello big world") "Hello Big World")
(is-equal (format nil "~@(~a~)" "hello big world") "Hello big world")
(is-equal (format nil "~(~a ~a~)" 'foo 'bar) "foo bar")

;;; ~* ~:*
(is-equal (format nil "~a ~* ~a" 1 2 3) "1  3")
(is-equal (format nil "~a ~:*~a" 1) "1 1")
(is-equal (format nil "~2*~a" 1 2 3) "3")

;;; ~{ ~}
(is-equal (format nil "~{~a~}" '(1 2 3)) "123")
(is-equal (format nil "~{~a~^, ~}" '(1 2 3)) "1, 2, 3")
(is-equal (format nil "~{~a~^, ~}" '()) "")
(is-equal (format nil "~{~a=~a~^ ~}" '(a 1 b 2)) "A=1 B=2")
(is-equal (format nil "~:{~a~a~}" '((1 2) (3 4))) "1234")
(is-equal (format nil "~@{~a~^-~}" 1 2 3) "1-2-3")
(is-equal (format nil "~{~{~a~}~^|~}" '((1 2) (3))) "12|3")
(is-equal (format nil "~{[~a]~}" '("x")) "[x]")
(is-equal (format nil "~1{~a~}" '(1 2 3)) "1")

;;; ~[ ~; ~]
(is-equal (format nil "~[zero~;one~;two~]" 0) "zero")
(is-equal (format nil "~[zero~;one~;two~]" 2) "two")
(is-equal (format nil "~[zero~;one~;two~]" 5) "")
(is-equal (format nil "~[zero~;one~:;many~]" 9) "many")
(is-equal (format nil "~:[no~;yes~]" nil) "no")
(is-equal (format nil "~:[no~;yes~]" 'anything) "yes")
(is-equal (format nil "~@[x=~a~]" 5) "x=5")
(is-equal (format nil "~@[x=~a~]" nil) "")
(is-equal (format nil "~:[~a~;[~a]~]" t 'v) "[V]")

;;; ~^
(is-equal (format nil "~a~^ and ~a" 1) "1")
(is-equal (format nil "~a~^ and ~a" 1 2) "1 and 2")
(is-equal (format nil "~{~a~^ ~}" '(a)) "A")

;;; ~?
(is-equal (format nil "~? ~d" "<~a>" '(1) 2) "<1> 2")
(is-equal (format nil "~@? ~d" "<~a>" 1 2) "<1> 2")

;;; format in combination
(is-equal (format nil "~a: ~{~d~^+~} = ~d" "sum" '(1 2 3) 6) "sum: 1+2+3 = 6")
(is-equal (format nil "~d ~:[apples~;apple~]" 1 t) "1 apple")
(is-equal (let ((*print-base* 10)) (format nil "~a" 10)) "10")

;;; logical blocks: ~:< defaults the missing prefix and suffix to ( and )
(is-equal (format nil "~<~a ~a~:>" '(1 2)) "1 2")
(is-equal (format nil "~:<~a ~a~:>" '(1 2)) "(1 2)")
(is-equal (format nil "~:<[~;~a ~a~:>" '(1 2)) "[1 2)")
(is-equal (format nil "~:<<~;~a ~a~;>~:>" '(1 2)) "<1 2>")
(is-equal (format nil "~:@<~a ~a~:>" 1 2) "(1 2)")

;;; errors
(signals error (format nil "~d"))
(signals error (format nil "~a ~a" 1))
(signals error (format nil "~{~a~}" 5))

;;; ~F without parameters prints the printer's shortest digits (a tie
;;; between two goes up)
(is-equal (format nil "~f" 2515367.3) "2515367.3")
(is-equal (format nil "~e" 2515367.3) "2.5153673e+6")
(is-equal (format nil "~f" 0.1) "0.1")

(done)
