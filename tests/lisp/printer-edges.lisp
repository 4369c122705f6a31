;;;; printer-edges.lisp -- format parameters of any size, ~F at the edges
;;;; of its field, case conversion beyond ASCII, princ under
;;;; *print-readably*, printing readably (random states, arrays, ignored
;;;; limits) and *print-circle* labels.
(suite "printer-edges")

;;; format: integer parameters of any size
(is-equal (format nil "~2,,,,1000000000000000000r" 17) "10001")
(is-equal (format nil "~100000000000000000000000000000000[a~;b~;c~;d~]" 3) "")
;; ~^ compares bignum parameters exactly
(is-equal (format nil "~{~v,v^~A~}" (list (1+ most-positive-fixnum) (1+ most-positive-fixnum) 1)) "")
(is-equal (format nil "~{~0,v,v^~A~}" (list (1+ most-positive-fixnum) most-positive-fixnum 1)) "1")
(is-equal (format nil "~{~0,v,v^~A~}" (list (1+ most-positive-fixnum) (+ 2 most-positive-fixnum) 1)) "")
(is-equal (format nil "~{~v,v^~A~}" (list (expt 10 30) (1+ (expt 10 30)) 1)) "1")
(is-equal (format nil "~v@{~a~}" (expt 10 30) 1 2) "12")
;; a bignum parameter reaches a ~/function/ as itself
(defun printer-edges-param (stream arg colon at p)
  (declare (ignore arg colon at))
  (format stream "~a" (= p (expt 10 25))))
(is-equal (format nil "~v/printer-edges-param/" (expt 10 25) 0) "T")
;; a huge negative width is no width (SBCL refuses these)
#-sbcl (is-equal (format nil "~-1000000000000000000d" 1234) "1234")
#-sbcl (is-equal (format nil "~vd" (1- most-negative-fixnum) 1234) "1234")
#-sbcl (is-equal (format nil "~-100000000000000000000a|" "xyz") "xyz|")
#-sbcl (is-equal (format nil "~10,-1000000000000000r" 12345) "12345")
;; a width or count that would ask for that much output is refused
#-sbcl (signals error (format nil "~100000000000000000000a" "x"))
#-sbcl (signals error (format nil "~v%" (expt 10 20)))
(signals error (format nil "~v,vd" "wide" 1 2))

;;; ~F: the leading zero only where there is room, unless it is the only digit
(is-equal (format nil "~2,2f" 0.5) ".50")
(is-equal (format nil "~3,2f" 0.5) ".50")
(is-equal (format nil "~4,2f" 0.5) "0.50")
(is-equal (format nil "~3f" 0.000001) "0.0")
(is-equal (format nil "~3f" 1.5) "1.5")
;; a fraction rounded away is still one zero digit (SBCL prints "1." and
;; ".", the standard's "a single zero digit ... after the decimal point")
#-sbcl (is-equal (format nil "~2f" 1.1) "1.0")
#-sbcl (is-equal (format nil "~0f" 0.01) ".0")
#-sbcl (is-equal (format nil "~0,0f" 0.01) "0.")
(is-equal (format nil "~2,,,'*f" 1.1) "1.")

;;; ~<...~>: minpad goes between segments, a lone one only fills mincol
(is-equal (format nil "~v,,v<~A~>" 11 3 "xxxxxxxxxxxxxxxxxxxxxxxx") "xxxxxxxxxxxxxxxxxxxxxxxx")
(is-equal (format nil "~10,,3<~A~>" "abc") "       abc")
(is-equal (format nil "~3,,3<~A~;~A~>" "abc" "d") "abc   d")
(is-equal (format nil "~3,,3:@<~A~>" "abc") "   abc   ")

;;; ~( ~) and ~:C: case and names as char-downcase, char-upcase, char-name
(is-equal (format nil "~(~c~)" (code-char 256)) (string (code-char 257)))
(is-equal (format nil "~:@(~c~)" (code-char 255)) (string (code-char 376)))
(is-equal (format nil "~@(~a~)" (coerce (list (code-char 1073) (code-char 1074)) 'string))
          (coerce (list (code-char 1041) (code-char 1074)) 'string))
(is (loop for i below 256
          for c = (code-char i)
          always (or (graphic-char-p c) (string= (format nil "~:c" c) (char-name c)))))
(is (loop for i below 1024
          for c = (code-char i)
          always (and (string= (format nil "~(~c~)" c) (string (char-downcase c)))
                      (string= (format nil "~:@(~c~)" c) (string (char-upcase c))))))

;;; princ binds *print-readably* to NIL (write does not)
(is-equal (with-standard-io-syntax (princ-to-string #\a)) "a")
(is-equal (with-standard-io-syntax (with-output-to-string (s) (princ "x" s))) "x")
(is-equal (with-standard-io-syntax (format nil "~a ~a" #\b "c")) "b c")
(is-equal (write-to-string (make-symbol "ABC") :readably t :escape nil) "#:ABC")
(is-eql (read-from-string (write-to-string #\a :readably t :escape nil)) #\a)

;;; printing readably ignores *print-length* and *print-level*
(is-equal (write-to-string (list 1 (list 2 (list 3)) 4 5) :readably t :level 1 :length 2 :pretty nil)
          "(1 (2 (3)) 4 5)")
(is-equal (write-to-string (vector 1 2 3) :readably t :length 0 :pretty nil) "#(1 2 3)")

;;; a random state prints readably and reads back as one that draws the same
(is (let* ((rs (make-random-state t))
           (copy (make-random-state rs))
           (back (with-standard-io-syntax
                   (read-from-string (write-to-string rs :readably t)))))
      (and (random-state-p back)
           (equal (loop repeat 20 collect (random 1000000 copy))
                  (loop repeat 20 collect (random 1000000 back))))))
(is (search "RANDOM-STATE" (princ-to-string (make-random-state))))
;; also from a package that does not use COMMON-LISP
(defpackage "PRINTER-EDGES-BARE" (:use))
(is (let* ((rs (make-random-state t))
           (copy (make-random-state rs))
           (back (let ((*package* (find-package "PRINTER-EDGES-BARE")))
                   (read-from-string (write-to-string rs :readably t)))))
      (and (random-state-p back) (= (random 1000000 copy) (random 1000000 back)))))

;;; arrays #nA cannot give back are written as what makes them
(defun printer-edges-round-trip (a)
  (with-standard-io-syntax (read-from-string (write-to-string a :readably t))))
(is-equal (array-dimensions (printer-edges-round-trip (make-array '(0 3)))) '(0 3))
(is-equal (array-dimensions (printer-edges-round-trip (make-array '(2 0 3)))) '(2 0 3))
(is-equal (let ((a (printer-edges-round-trip
                    (make-array '(2 2) :element-type 'character :initial-element #\a))))
            (list (array-dimensions a) (array-element-type a) (aref a 1 1)))
          '((2 2) character #\a))
(is-equal (let ((a (printer-edges-round-trip
                    (make-array '(2 3) :element-type 'bit :initial-element 1))))
            (list (array-dimensions a) (array-element-type a) (aref a 1 2)))
          '((2 3) bit 1))
(is-equal (let ((a (printer-edges-round-trip (make-array '() :initial-element 7))))
            (list (array-rank a) (aref a)))
          '(0 7))
(is-equalp (printer-edges-round-trip
            (make-array '(2 2) :displaced-to (vector 1 2 3 4 5) :displaced-index-offset 1))
           #2a((2 3) (4 5)))
#-sbcl (signals print-not-readable
                (let ((*read-eval* nil)) (write-to-string (make-array '(0 3)) :readably t)))

;;; *print-circle*: uninterned symbols get labels; only what prints counts
(is-equal (write-to-string (let ((s (make-symbol "X"))) (cons s s)) :circle t :pretty nil)
          "(#1=#:X . #1#)")
(is-equal (write-to-string (let ((a (make-symbol "X")) (b (make-symbol "X"))) (list a b a b))
                           :circle t :pretty nil)
          "(#1=#:X #2=#:X #1# #2#)")
(is-equal (write-to-string (let ((s (make-symbol "X"))) (list s)) :circle t :pretty nil)
          "(#:X)")
(is (let* ((s (make-symbol "X"))
           (back (read-from-string (write-to-string (list s s) :circle t :pretty nil))))
      (and (eq (first back) (second back)) (null (symbol-package (first back))))))
(is-equal (let ((x (list 1))) (write-to-string (list x x) :circle t :length 1 :pretty nil))
          "((1) ...)")
(is-equal (let ((x (list 1))) (write-to-string (list x (list x)) :circle t :level 1 :pretty nil))
          "(# #)")
;; a dotted tail prints past *print-length*, so it counts
(is-equal (let ((g (make-symbol "G")))
            (write-to-string (list (list* 1 2 g) g) :circle t :pretty nil :length 2))
          "((1 2 . #1=#:G) #1#)")
(defun printer-edges-block (x len)
  (let ((*print-pretty* t) (*print-circle* t) (*print-length* len) (*print-right-margin* 100))
    (with-output-to-string (os)
      (pprint-logical-block (os x :prefix "<" :suffix ">")
        (pprint-exit-if-list-exhausted)
        (write (pprint-pop) :stream os)
        (loop (pprint-exit-if-list-exhausted)
              (write-char #\Space os)
              (write (pprint-pop) :stream os))))))
(is-equal (let* ((tail (list 1)) (x (list* tail 2 tail)))
            (mapcar (lambda (n) (printer-edges-block x n)) '(nil 0 1 2 3)))
          '("<#1=(1) 2 . #1#>" "<...>" "<(1) ...>" "<(1) 2 ...>" "<#1=(1) 2 . #1#>"))
(is-equal (let* ((tail (list 2)) (x (list* 1 tail)))
            (setf (cdr tail) tail)
            (mapcar (lambda (n) (printer-edges-block x n)) '(0 1 2 3)))
          '("<...>" "<1 ...>" "<1 2 ...>" "<1 . #1=(2 . #1#)>"))

;;; the symbol with the empty name reads back with its package prefix
(is (eq (read-from-string "cl-user::||") (intern "" "CL-USER")))
(is (let ((s (intern "" "CL-USER")) (*package* (find-package "KEYWORD")))
      (eq (read-from-string (prin1-to-string s)) s)))

;;; print-unreadable-object returns NIL, whatever its body returns
(is-equal (multiple-value-list
           (print-unreadable-object (nil (make-broadcast-stream) :identity t) (values 1 2 3)))
          '(nil))
(is-equal (let ((*print-pretty* t))
            (multiple-value-list
             (print-unreadable-object (nil (make-broadcast-stream) :type t) (values))))
          '(nil))

(done)
