;;;; packages.lisp -- packages: defining them, interning, exporting, importing,
;;;; shadowing, using, iterating, the reader's and printer's prefixes, errors.
(suite "packages")

;;; the standard packages
(is (packagep (find-package "COMMON-LISP")))
(is (eq (find-package "CL") (find-package "COMMON-LISP")))
(is (eq (find-package :cl-user) (find-package "COMMON-LISP-USER")))
(is (eq (find-package "KEYWORD") (symbol-package :test)))
(is (eq (symbol-package 'car) (find-package "COMMON-LISP")))
(is-equal (package-name (symbol-package 'car)) "COMMON-LISP")
(is (member "CL" (package-nicknames "COMMON-LISP") :test #'string=))
(is (member (find-package "COMMON-LISP") (package-use-list "COMMON-LISP-USER")))
(is (eq *package* (find-package "COMMON-LISP-USER")))
(is (member (find-package "KEYWORD") (list-all-packages)))
(is (null (find-package "NO-SUCH-PACKAGE-HERE")))
(is (eq (find-package (find-package "CL")) (find-package "CL")))
(is-equal (multiple-value-list (find-symbol "CAR" "CL")) (list 'car :external))
(is-equal (multiple-value-list (find-symbol "CAR" "CL-USER")) (list 'car :inherited))
(is-equal (multiple-value-list (find-symbol "NO-SUCH-SYMBOL-XYZZY" "CL")) '(nil nil))
(is-eql (length (let ((l '())) (do-external-symbols (s "CL") (push s l)) l)) 978)

;;; defpackage
(defpackage "PK-GEOM"
  (:use "COMMON-LISP")
  (:nicknames "GEOM")
  (:export "AREA" "PERIMETER")
  (:intern "HELPER")
  (:documentation "Geometry."))
(is (packagep (find-package "PK-GEOM")))
(is (eq (find-package "GEOM") (find-package "PK-GEOM")))
(is-equal (package-nicknames "PK-GEOM") '("GEOM"))
(is (member (find-package "CL") (package-use-list "PK-GEOM")))
(is (member (find-package "PK-GEOM") (package-used-by-list "CL")))
(is-equal (multiple-value-list (find-symbol "AREA" "PK-GEOM")) (list 'pk-geom:area :external))
(is-eql (nth-value 1 (find-symbol "HELPER" "PK-GEOM")) :internal)
(is-eql (nth-value 1 (find-symbol "CAR" "PK-GEOM")) :inherited)
(is (eq (symbol-package 'pk-geom:area) (find-package "PK-GEOM")))
(is (eq 'geom:area 'pk-geom:area))
(is (eq 'geom::helper 'pk-geom::helper))
(is-equal (symbol-name 'pk-geom::helper) "HELPER")

;;; defun in another package, called through its prefix
(defun pk-geom:area (w h) (* w h))
(is-eql (pk-geom:area 3 4) 12)
(is-eql (funcall (find-symbol "AREA" "PK-GEOM") 2 5) 10)

;;; intern and its statuses
(defpackage "PK-A" (:use))
(is-eql (nth-value 1 (intern "X1" "PK-A")) nil)
(is-eql (nth-value 1 (intern "X1" "PK-A")) :internal)
(is (null (package-use-list "PK-A")))
(is (null (nth-value 1 (find-symbol "CAR" "PK-A"))))

;;; export, unexport
(export (find-symbol "X1" "PK-A") "PK-A")
(is-eql (nth-value 1 (find-symbol "X1" "PK-A")) :external)
(unexport (find-symbol "X1" "PK-A") "PK-A")
(is-eql (nth-value 1 (find-symbol "X1" "PK-A")) :internal)
(export (intern "X2" "PK-A") "PK-A")

;;; use-package, unuse-package
(defpackage "PK-B" (:use))
(use-package "PK-A" "PK-B")
(is-eql (nth-value 1 (find-symbol "X2" "PK-B")) :inherited)
(is (null (nth-value 1 (find-symbol "X1" "PK-B"))))
(is (member (find-package "PK-B") (package-used-by-list "PK-A")))
(unuse-package "PK-A" "PK-B")
(is (null (nth-value 1 (find-symbol "X2" "PK-B"))))
(is (null (package-used-by-list "PK-A")))

;;; import, and a symbol's home stays where it was
(import (find-symbol "X1" "PK-A") "PK-B")
(is-eql (nth-value 1 (find-symbol "X1" "PK-B")) :internal)
(is (eq (find-symbol "X1" "PK-B") (find-symbol "X1" "PK-A")))
(is (eq (symbol-package (find-symbol "X1" "PK-B")) (find-package "PK-A")))

;;; unintern
(intern "GONE" "PK-B")
(let ((s (find-symbol "GONE" "PK-B")))
  (is (unintern s "PK-B"))
  (is (null (symbol-package s)))
  (is (null (nth-value 1 (find-symbol "GONE" "PK-B")))))
(is (not (unintern (make-symbol "NEVER") "PK-B")))

;;; shadow and shadowing-import
(defpackage "PK-C" (:use "COMMON-LISP") (:shadow "CAR"))
(is (not (eq (find-symbol "CAR" "PK-C") 'car)))
(is (member (find-symbol "CAR" "PK-C") (package-shadowing-symbols "PK-C")))
(is-eql (nth-value 1 (find-symbol "CAR" "PK-C")) :internal)
(shadowing-import (find-symbol "X2" "PK-A") "PK-C")
(is (member (find-symbol "X2" "PK-A") (package-shadowing-symbols "PK-C")))
(defpackage "PK-D" (:use "COMMON-LISP") (:shadowing-import-from "PK-A" "X1"))
(is (eq (find-symbol "X1" "PK-D") (find-symbol "X1" "PK-A")))

;;; :import-from
(defpackage "PK-E" (:use) (:import-from "COMMON-LISP" "CAR" "CDR"))
(is (eq (find-symbol "CAR" "PK-E") 'car))
(is-eql (nth-value 1 (find-symbol "CDR" "PK-E")) :internal)
(is (null (nth-value 1 (find-symbol "CONS" "PK-E"))))

;;; name conflicts are package-errors
(defpackage "PK-F" (:use))
(intern "X2" "PK-F")
(signals package-error (use-package "PK-A" "PK-F"))
(signals package-error (import (find-symbol "X2" "PK-A") "PK-F"))
(signals package-error (make-package "PK-A"))
(signals package-error (export (intern "NOT-HERE" "PK-F") "PK-A"))
(signals package-error (find-symbol "X" "NO-SUCH-PACKAGE-HERE"))

;;; make-package, rename-package, delete-package
(let ((p (make-package "PK-TEMP" :use '() :nicknames '("PKT"))))
  (is (eq (find-package "PKT") p))
  (rename-package p "PK-TEMP2" '("PKT2"))
  (is (null (find-package "PK-TEMP")))
  (is (null (find-package "PKT")))
  (is (eq (find-package "PKT2") p))
  (is-equal (package-name p) "PK-TEMP2")
  (let ((s (intern "IN-TEMP" p)))
    (is (delete-package p))
    (is (null (package-name p)))
    (is (null (find-package "PK-TEMP2")))
    (is (null (symbol-package s)))
    (is (not (member p (list-all-packages))))))

;;; in-package and *package*
(let ((*package* (find-package "PK-GEOM")))
  (is-equal (package-name *package*) "PK-GEOM")
  (is (eq (read-from-string "helper") (find-symbol "HELPER" "PK-GEOM")))
  (is (eq (intern "FRESH") (find-symbol "FRESH" "PK-GEOM")))
  (is-print 'pk-geom::helper "HELPER")
  (is-print 'car "CAR"))
(is-equal (let ((*package* *package*))
            (eval '(in-package "PK-A"))
            (package-name *package*))
          "PK-A")
(is (eq *package* (find-package "COMMON-LISP-USER")))

;;; the reader's prefixes
(is (eq (read-from-string "pk-geom:area") 'pk-geom:area))
(is (eq (read-from-string "PK-GEOM::HELPER") 'pk-geom::helper))
(is (eq (read-from-string "cl:car") 'car))
(is (eq (read-from-string ":kw") :kw))
(is (eq (read-from-string "keyword:kw") :kw))
(signals error (read-from-string "pk-geom:helper"))
(signals error (read-from-string "no-such-package-here:x"))
(is (eq (read-from-string "pk-a::made-by-reader")
        (find-symbol "MADE-BY-READER" "PK-A")))
(is (eq (read-from-string "|PK-GEOM|::|HELPER|") 'pk-geom::helper))

;;; the printer's prefixes
(is-print 'pk-geom:area "PK-GEOM:AREA")
(is-print 'pk-geom::helper "PK-GEOM::HELPER")
(is-print :kw ":KW")
(is-print (make-symbol "UNINTERNED") "#:UNINTERNED")
(is-print 'car "CAR")
(is-equal (let ((*package* (find-package "PK-A")))
            (prin1-to-string 'car))
          "COMMON-LISP:CAR")
(is-equal (let ((*package* (find-package "PK-A")))
            (prin1-to-string (find-symbol "X1" "PK-A")))
          "X1")
(is-equal (princ-to-string 'pk-geom::helper) "HELPER")
(is-equal (write-to-string 'pk-geom::helper :escape nil) "HELPER")
(let ((s (intern "X2" "PK-F")))
  (is (eq (read-from-string (prin1-to-string s)) s)))

;;; iterating
(is-equal (let ((l '())) (do-external-symbols (s "PK-GEOM") (push (symbol-name s) l))
            (sort l #'string<))
          '("AREA" "PERIMETER"))
(is (let ((l '())) (do-symbols (s "PK-GEOM") (push s l))
      (and (member 'pk-geom::helper l) (member 'car l))))
(is (let ((found nil))
      (do-all-symbols (s) (when (eq s 'pk-geom::helper) (setq found t)))
      found))
(is-equal (sort (loop for s being the external-symbols of "PK-GEOM" collect (symbol-name s))
                #'string<)
          '("AREA" "PERIMETER"))
(is (member 'pk-geom::helper (loop for s being the present-symbols of "PK-GEOM" collect s)))
(is-equal (let ((l '()))
            (with-package-iterator (next "PK-GEOM" :external)
              (loop (multiple-value-bind (more s status pkg) (next)
                      (unless more (return))
                      (push (list (symbol-name s) status (package-name pkg)) l))))
            (sort l #'string< :key #'first))
          '(("AREA" :external "PK-GEOM") ("PERIMETER" :external "PK-GEOM")))
(is (member 'pk-geom::helper (find-all-symbols "HELPER")))
(is (member 'car (find-all-symbols 'car)))

;;; COMMON-LISP is locked
(signals error (export (intern "NEW-ONE" "PK-A") "COMMON-LISP"))
(signals error (unexport 'car "COMMON-LISP"))
(signals error (delete-package "COMMON-LISP"))
(signals error (rename-package "COMMON-LISP" "MINE"))
(signals error (eval '(defvar list 1)))
(signals error (eval '(defun car (x) x)))
(signals error (eval '(defmacro cons (x) x)))
(signals error (eval '(defconstant append 3)))

;;; keywords evaluate to themselves
(is (eq (symbol-value (intern "FRESH-KEY" "KEYWORD")) (intern "FRESH-KEY" "KEYWORD")))
(is (keywordp (intern "ANOTHER" :keyword)))

;;; gensym and symbols with no home
(is (null (symbol-package (gensym))))
(is (null (symbol-package (copy-symbol 'car))))

;;; package errors that can be corrected offer a restart other than abort
(defun pk-restart-names (thunk)
  (block found
    (handler-bind ((package-error
                     (lambda (c)
                       (return-from found
                         (remove 'abort (mapcar #'restart-name (compute-restarts c)))))))
      (funcall thunk)
      :no-error)))
(unless (find-package "PK-TAKEN") (make-package "PK-TAKEN" :use nil))
(is (consp (pk-restart-names (lambda () (make-package "PK-TAKEN" :use nil)))))
(is (consp (pk-restart-names (lambda () (make-package "PK-FRESH-1" :use nil :nicknames '("PK-TAKEN"))))))
(is (consp (pk-restart-names (lambda () (delete-package "PK-NEVER-MADE")))))
(is (consp (pk-restart-names (lambda () (defpackage "PK-IMPORTER" (:use) (:import-from "PK-TAKEN" "NOT-THERE"))))))
#+jiti
(is (eq (handler-bind ((package-error #'continue)) (make-package "PK-TAKEN" :use nil)) (find-package "PK-TAKEN")))
#+jiti
(is (null (handler-bind ((package-error #'continue)) (delete-package "PK-NEVER-MADE"))))
(signals program-error (macroexpand '(defpackage "PK-BAD" (:size 1) (:size 2))))
(signals program-error (macroexpand '(defpackage "PK-BAD" (:export "A") (:intern "A"))))
(signals program-error (macroexpand '(defpackage "PK-BAD" (:shadow "A") (:intern "A"))))

(done)
