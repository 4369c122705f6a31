;;;; driver.lisp -- run test files of the public ANSI Common Lisp test suite
;;;; (github.com/pfdietz/ansi-test) inside one Lisp, without its own harness.
;;;;
;;;; bench/ansi/run.sh loads this file, then a generated file that calls
;;;; ANSI-LOAD on each support file and ANSI-RUN-FILE on one test file, each
;;;; with the file's text as a string (the Lisp under test needs no file
;;;; system).  Every top-level form is read and evaluated on its own, so a
;;;; form that does not read or fails is counted and skipped; the DEFTESTs
;;;; of the test file are run after it, in order, each reported on its own
;;;; line:
;;;;
;;;;   @@ANSI PASS <name>      @@ANSI FAIL <name> <why>
;;;;
;;;; The test's values are compared with the expected ones by ANSI-SAME:
;;;; EQL, except that conses, vectors (their active elements), other arrays
;;;; (by dimensions and elements) and strings (case-sensitively) compare by
;;;; contents, and zeros of one type
;;;; are the same whatever their sign.
;;;;
;;;; Written to run on a Lisp with or without packages: nothing here uses a
;;;; package prefix, and the suite's own package files are loaded as
;;;; ordinary text (on a Lisp without packages they simply fail).

(defvar *ansi-skip* nil "Names (strings) of tests not to run (they hung before).")
(defvar *ansi-errors* 0 "Support forms that did not read or signalled.")
(defvar *ansi-verbose* nil "Report each support form that fails (run.sh --verbose).")
(defvar *ansi-eof* (list :eof))

(defun ansi-same (x y)
  (cond ((eq x y) t)
        ((consp x) (and (consp y) (ansi-same (car x) (car y)) (ansi-same (cdr x) (cdr y))))
        ((and (stringp x) (stringp y)) (string= x y))
        ((and (vectorp x) (vectorp y))   ; the active elements (fill pointers)
         (and (= (length x) (length y))
              (let ((ok t))
                (dotimes (i (length x) ok)
                  (unless (ansi-same (aref x i) (aref y i)) (setq ok nil))))))
        ((and (arrayp x) (arrayp y))
         (and (equal (array-dimensions x) (array-dimensions y))
              (let ((n (array-total-size x)) (ok t))
                (dotimes (i n ok)
                  (unless (ansi-same (row-major-aref x i) (row-major-aref y i))
                    (setq ok nil))))))
        ((and (numberp x) (numberp y) (zerop x) (zerop y))
         (eq (type-of x) (type-of y)))
        (t (eql x y))))

(defun ansi-describe (c)
  (let ((text (handler-case (let ((*print-length* 5) (*print-level* 3))
                              (princ-to-string c))
                (error () "?"))))
    (substitute #\Space #\Newline
                (subseq text 0 (min 160 (length text))))))

(defun ansi-report (name ok why)
  (let ((*print-pretty* nil))
    (format t "~%@@ANSI ~a ~a~@[ ~a~]~%" (if ok "PASS" "FAIL") name why)
    (finish-output)))

(defun ansi-run-test (name form vals)
  (let ((key (symbol-name name)))
    (if (member key *ansi-skip* :test #'string=)
        (ansi-report key nil "skipped: it did not finish in an earlier run")
        (let ((result (handler-case
                          (let ((*print-pretty* nil)) (multiple-value-list (eval form)))
                        (serious-condition (c) (list :ansi-condition c)))))
          (if (and (consp result) (eq (car result) :ansi-condition))
              (ansi-report key nil (format nil "~a: ~a" (type-of (cadr result))
                                           (ansi-describe (cadr result))))
              (let ((ok (and (= (length result) (length vals))
                             (handler-case (every #'ansi-same result vals)
                               (serious-condition () nil)))))
                (ansi-report key ok
                             (unless ok
                               (handler-case
                                   (let ((*print-length* 8) (*print-level* 4))
                                     (ansi-describe (format nil "got ~s" result)))
                                 (serious-condition () "got an unprintable value"))))))))))

;; (deftest name [:keyword value]* form expected-value*)
(defun ansi-deftest-expansion (whole)
  (let ((name (cadr whole)) (p (cddr whole)))
    (loop while (and (keywordp (car p)) (cdr p)) do (setq p (cddr p)))
    (list 'ansi-run-test (list 'quote name) (list 'quote (car p)) (list 'quote (cdr p)))))

(defun ansi-deftest-form-p (form)
  (and (consp form) (symbolp (car form)) (string= (symbol-name (car form)) "DEFTEST")))

(defun ansi-eval (form)
  (handler-case (progn (eval form) t)
    (serious-condition (c)
      (incf *ansi-errors*)
      (when *ansi-verbose*
        (format t "~%@@ANSI SUPPORT-ERROR ~a: ~a~%"
                (let ((*print-length* 3) (*print-level* 2)) (ansi-describe (prin1-to-string form)))
                (ansi-describe c)))
      nil)))

;; The start of the next line that begins with "(", after pos; or NIL.
(defun ansi-next-toplevel (text pos)
  (let ((p (position #\Newline text :start (min (1+ pos) (length text)))))
    (loop
      (when (null p) (return nil))
      (when (and (< (1+ p) (length text)) (char= (char text (1+ p)) #\())
        (return (1+ p)))
      (setq p (position #\Newline text :start (1+ p))))))

;; TEXT with each #.FORM outside strings, comments and character names
;; replaced by the printed value of FORM.  A world's reader never
;; evaluates #. (a Lisp that does reads the text as it is); the suite uses
;; it for constants, which the driver computes for it.
(defun ansi-expand-sharp-dot (text)
  (with-output-to-string (out)
    (let ((i 0) (n (length text)))
      (flet ((copy (k) (write-string text out :start i :end (min n (+ i k))) (setq i (min n (+ i k)))))
        (loop while (< i n) do
          (let ((c (char text i)))
            (cond ((char= c #\")
                   (copy 1)
                   (loop while (and (< i n) (char/= (char text i) #\"))
                         do (copy (if (char= (char text i) #\\) 2 1)))
                   (copy 1))
                  ((char= c #\;)
                   (let ((e (or (position #\Newline text :start i) n))) (copy (- e i))))
                  ((and (char= c #\#) (< (1+ i) n) (char= (char text (1+ i)) #\|))
                   (let ((e (search "|#" text :start2 (+ i 2)))) (copy (if e (- (+ e 2) i) (- n i)))))
                  ((and (char= c #\#) (< (1+ i) n) (char= (char text (1+ i)) #\\))
                   (copy 3))
                  ((and (char= c #\#) (< (1+ i) n) (char= (char text (1+ i)) #\.))
                   (multiple-value-bind (form next) (read-from-string text t nil :start (+ i 2))
                     (let ((*print-length* nil) (*print-level* nil) (*print-readably* nil))
                       (write-string " " out)
                       (prin1 (eval form) out)
                       (write-string " " out))
                     (setq i next)))
                  (t (copy 1)))))))))

;; Call fn on each form of TEXT.  A form that does not read is read again
;; with its #. forms computed (ansi-expand-sharp-dot); if it still does not,
;; it is counted and skipped up to the next line that begins with "(".
(defun ansi-each-form (text fn)
  (let ((pos 0))
    (loop
      (let ((next nil) (form nil))
        (handler-case (multiple-value-setq (form next)
                        (read-from-string text nil *ansi-eof* :start pos))
          (serious-condition () (setq next nil)))
        (cond ((null next)
               (let* ((end (or (ansi-next-toplevel text pos) (length text)))
                      (chunk (handler-case (ansi-expand-sharp-dot (subseq text pos end))
                               (serious-condition () nil))))
                 (if (and chunk (search "#." text :start2 pos :end2 end))
                     (ansi-each-form chunk fn)
                     (progn
                       (incf *ansi-errors*)
                       (when *ansi-verbose*
                         (format t "~%@@ANSI SUPPORT-ERROR unreadable form at ~d~%" pos))))
                 (setq pos (if (< end (length text)) end nil))
                 (unless pos (return))))
              ((eq form *ansi-eof*) (return))
              (t (setq pos next) (funcall fn form)))))))

(defvar *ansi-support* nil "True while a support file loads: its tests are not run.")

(defun ansi-load (name text)
  (declare (ignore name))
  (let ((*ansi-support* t))
    (ansi-each-form text (lambda (form)
                           (if (ansi-deftest-form-p form)
                               nil
                               (ansi-eval form))))))

;; As the suite's own harness does: the file's other forms are evaluated as
;; they come, its tests (DEFTEST forms, and those macros make) are run after
;; the whole file, in order.
(defvar *ansi-tests* nil "The test file's tests, newest first, while it loads.")
(defvar *ansi-collecting* nil)

(defun ansi-add-test (run-form)
  (cond (*ansi-collecting* (push run-form *ansi-tests*))
        (*ansi-support* nil)   ; a support file's own tests run with their file
        (t (ansi-eval run-form))))

(defun ansi-run-file (name text)
  (declare (ignore name))
  (setq *ansi-tests* nil *ansi-collecting* t)
  (ansi-each-form text (lambda (form)
                         (if (ansi-deftest-form-p form)
                             (ansi-add-test (ansi-deftest-expansion form))
                             (ansi-eval form))))
  (setq *ansi-collecting* nil)
  (dolist (test (reverse *ansi-tests*))
    (ansi-eval test)))

;; What the suite's package files expect of its harness and loader: a
;; COMPILE-AND-LOAD in the user package that the test package imports, and
;; in the harness package DEFTEST (for tests made by macros), DEFNOTE and
;; the array accessors its comparison uses.
(defun compile-and-load (&rest args) (declare (ignore args)) nil)

(defun ansi-harness-ready ()
  (let ((pkg (if (fboundp 'find-package)
                 (funcall 'find-package "REGRESSION-TEST")
                 :none)))
    (when pkg
      (flet ((sym (name) (if (eq pkg :none) (intern name) (funcall 'intern name pkg))))
        (ansi-eval (list 'defmacro (sym "DEFTEST") '(&whole whole &rest rest)
                         '(declare (ignore rest))
                         '(list 'ansi-add-test (list 'quote (ansi-deftest-expansion whole)))))
        (ansi-eval (list 'defmacro (sym "DEFNOTE") '(&rest rest)
                         '(declare (ignore rest)) nil))
        (ansi-eval (list 'defun (sym "MY-AREF") '(a &rest subs) '(apply #'aref a subs)))
        (ansi-eval (list 'defun (sym "MY-ROW-MAJOR-AREF") '(a i) '(row-major-aref a i)))
        (ansi-eval (list 'defvar (sym "*CATCH-ERRORS*") t))
        (ansi-eval (list 'defvar (sym "*COMPILE-TESTS*") nil))))))

(defun ansi-done ()
  (format t "~%@@ANSI ERRORS ~d~%" *ansi-errors*)
  (finish-output))
