;;;; driver.lisp -- run test files of the public ANSI Common Lisp test suite
;;;; (github.com/pfdietz/ansi-test) inside one Lisp, through the suite's own
;;;; regression tester (rt.lsp).
;;;;
;;;; bench/ansi/run.sh loads this file, then a generated file that calls
;;;; ANSI-LOAD on each support file -- rt-package.lsp, rt.lsp, the test
;;;; package, the auxiliary files and notes.lsp, in the order of the suite's
;;;; gclload1.lsp -- and ANSI-RUN-FILES on the test files of a chapter, each
;;;; with the file's text as a string (the Lisp under test needs no file
;;;; system).  Every top-level form is read and evaluated on its own, so a
;;;; form that does not read or fails is counted and skipped.  The test
;;;; files' DEFTESTs are rt's: they enter rt's database, and after all the
;;;; files have loaded each test runs through rt's DO-ENTRY (rt's evaluation,
;;;; rt's comparison by EQUALP-WITH-CASE), in order, reported on a line of
;;;; its own, with the file that defined it:
;;;;
;;;;   @@ANSI PASS <file> <name>   @@ANSI FAIL <file> <name> <why>
;;;;   @@ANSI DISABLED <file> <name>
;;;;
;;;; A test carrying a note that is disabled is not run and not counted, as
;;;; rt's DO-TESTS leaves it out.  notes.lsp disables notes by implementation
;;;; with #+; ANSI-HARNESS-NOTES disables for every Lisp the ones it disables
;;;; for SBCL, so both are measured on the same tests.
;;;;
;;;; Written to run on any Lisp with packages: the harness's symbols are
;;;; found by name at run time.

(defvar *ansi-skip* nil "Names (strings) of tests not to run (they hung before).")
(defvar *ansi-errors* 0 "Support forms that did not read or signalled.")
(defvar *ansi-verbose* nil "Report each support form that fails (run.sh --verbose).")
(defvar *ansi-eof* (list :eof))

(defun ansi-describe (c &optional (limit 160))
  (let ((text (handler-case (let ((*print-length* 5) (*print-level* 3))
                              (princ-to-string c))
                (error () "?"))))
    (substitute #\Space #\Newline
                (subseq text 0 (min limit (length text))))))

(defun ansi-report (file name ok why)
  (let ((*print-pretty* nil))
    (format t "~%@@ANSI ~a ~a ~a~@[ ~a~]~%" (if ok "PASS" "FAIL") file name why)
    (finish-output)))

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

;; The harness's symbol NAME (a string), or NIL before rt.lsp is loaded.
(defun ansi-rt (name)
  (let ((pkg (find-package "REGRESSION-TEST")))
    (and pkg (find-symbol name pkg))))

(defun ansi-load (name text)
  (declare (ignore name))
  (ansi-each-form text #'ansi-eval))

;; Run one of rt's entries, of test file FILE; report it.  rt's DO-ENTRY
;; catches the errors a test signals; a serious condition that is not an
;; error (a limit) is caught here.  It returns the test's name when it
;; passed.
(defun ansi-run-entry (entry file)
  (let* ((key (symbol-name (funcall (ansi-rt "NAME") entry)))
         (report (make-string-output-stream)))
    (cond ((funcall (ansi-rt "HAS-DISABLED-NOTE") entry)
           (format t "~%@@ANSI DISABLED ~a ~a~%" file key))
          ((member key *ansi-skip* :test #'string=)
           (ansi-report file key nil "skipped: it did not finish in an earlier run"))
          (t
           (let ((ok (handler-case
                         (let ((*print-pretty* nil))
                           (funcall (ansi-rt "DO-ENTRY") entry report))
                       (serious-condition (c)
                         (format report "~a: ~a" (type-of c) (ansi-describe c))
                         nil))))
             (ansi-report file key ok
                          (unless ok
                            ;; rt's report: the form, expected and actual values
                            (ansi-describe (get-output-stream-string report) 1000))))))))

;; As the suite's harness does for a chapter: the test files' forms are
;; evaluated as they come, file after file, in one image (a file's macros
;; and definitions serve the files after it), their DEFTESTs filling rt's
;; database (emptied first); then every test runs in the order it was
;; defined.  FILES is a list of (name . text).  Before running, the plan:
;; "@@ANSI TEST <file> <name>" for each test, in order.
(defun ansi-run-files (files)
  (funcall (ansi-rt "REM-ALL-TESTS"))
  (let ((file-of (make-hash-table :test #'eq)) (plan nil))
    (dolist (f files)
      (format t "~%@@ANSI LOADING ~a~%" (car f))   ; progress for the runner
      (finish-output)
      ;; as LOAD does, a file's changes of *readtable* and *package* end with it
      (let ((*readtable* *readtable*) (*package* *package*))
        (ansi-each-form (cdr f) #'ansi-eval))
      (dolist (entry (cdr (symbol-value (ansi-rt "*ENTRIES*"))))
        (unless (gethash entry file-of) (setf (gethash entry file-of) (car f)))))
    (dolist (entry (cdr (symbol-value (ansi-rt "*ENTRIES*"))))
      (let ((file (or (gethash entry file-of) "?")))
        (push (cons entry file) plan)
        (format t "~%@@ANSI TEST ~a ~a~%" file (symbol-name (funcall (ansi-rt "NAME") entry)))))
    (finish-output)
    (dolist (p (nreverse plan))
      (ansi-run-entry (car p) (cdr p)))))

;; What the suite's package files expect of its loader: a COMPILE-AND-LOAD
;; in the user package that the test package imports.  The runner loads
;; the files it names itself.
(defun compile-and-load (&rest args) (declare (ignore args)) nil)

;; After notes.lsp: the notes it disables for SBCL, disabled here for the
;; Lisp under test too (notes.lsp's #+sbcl lines apply to SBCL alone).
(defun ansi-harness-notes ()
  (dolist (note '(:nil-vectors-are-strings :open-if-exists-new-version-no-error))
    (ansi-eval (list (ansi-rt "DISABLE-NOTE") note))))

(defun ansi-done ()
  (format t "~%@@ANSI ERRORS ~d~%" *ansi-errors*)
  (finish-output))
