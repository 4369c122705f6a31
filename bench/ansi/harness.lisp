;;;; harness.lisp -- run one chapter of the public ANSI Common Lisp test
;;;; suite through the suite's own harness: gclload1.lsp (rt, the
;;;; CL-TEST package, the auxiliary files, the ANSI-TESTS logical host),
;;;; then the chapter's load.lsp, then RT:DO-TESTS.
;;;;
;;;; run.sh --harness rt writes this file, with @CHAPTER@ replaced, into a
;;;; copy of the suite: jiti reads that copy as its file table (jiti run
;;;; --files), SBCL as its current directory.  Each test is reported on a
;;;; line of its own (@@ANSI PASS name, @@ANSI FAIL name); a support form
;;;; that signals while a file loads is reported (@@ANSI LOAD-ERROR) and
;;;; skipped through LOAD's CONTINUE restart where the Lisp has one.

;; The restart that skips the form LOAD is evaluating (not a CONTINUE the
;; form itself established, such as a retry of what failed).
(defun ansi-skip-form-restart (c)
  (find-if (lambda (r)
             (and (eq (restart-name r) 'continue)
                  (search "Skip this form" (princ-to-string r))))
           (compute-restarts c)))

(defvar *ansi-load-errors* 0)

(defun ansi-harness-load (file)
  (handler-bind ((error (lambda (c)
                          (format t "~&@@ANSI LOAD-ERROR ~a: ~a~%" file
                                  (let ((*print-length* 5) (*print-level* 3))
                                    (handler-case (substitute #\Space #\Newline (princ-to-string c))
                                      (error () "?"))))
                          (let ((r (ansi-skip-form-restart c)))
                            (when (and r (< (incf *ansi-load-errors*) 1000))
                              (invoke-restart r))))))
    (load file)))

(ansi-harness-load "gclload1.lsp")
(in-package :cl-test)
(cl-user::ansi-harness-load "@CHAPTER@/load.lsp")
;; a failure's report prints its values: keep a deep or long one short
(let ((*print-pretty* nil) (*print-level* 4) (*print-length* 12)) (rt:do-tests))
(let ((*print-pretty* nil))
  (dolist (n rt::*passed-tests*) (format t "~&@@ANSI PASS ~a~%" n))
  (dolist (n rt::*failed-tests*) (format t "~&@@ANSI FAIL ~a~%" n))
  (format t "~&@@ANSI DONE~%"))
