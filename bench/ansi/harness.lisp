;;;; harness.lisp -- run one chapter of the public ANSI Common Lisp test
;;;; suite through the suite's own harness: gclload1.lsp (rt, the
;;;; CL-TEST package, the auxiliary files, the ANSI-TESTS logical host),
;;;; then the chapter's load.lsp, then RT:DO-TESTS.
;;;;
;;;; run.sh --harness rt writes this file, with @CHAPTER@ replaced, into a
;;;; copy of the suite: jiti reads that copy as its file table (jiti run
;;;; --files), SBCL as its current directory.  The tests run one by one
;;;; through RT:DO-TEST, in the suite's order, each announced (@@ANSI START
;;;; name) and reported on a line of its own (@@ANSI PASS name, @@ANSI FAIL
;;;; name); the tests named in @SKIP@ (they hung in an earlier run) are
;;;; reported failed without running.  A support form that signals while a
;;;; file loads is reported (@@ANSI LOAD-ERROR) and skipped through LOAD's
;;;; CONTINUE restart where the Lisp has one.

(defvar *ansi-skip* '(@SKIP@))

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
(let ((*print-pretty* nil) (*print-level* 4) (*print-length* 12))
  (dolist (name (rt::pending-tests))
    (cond ((member (string name) cl-user::*ansi-skip* :test #'string=)
           (format t "~&@@ANSI FAIL ~a skipped: it did not finish in an earlier run~%" name))
          (t (format t "~&@@ANSI START ~a~%" name)
             (finish-output)
             (format t "~&@@ANSI ~a ~a~%" (if (rt::do-test name) "PASS" "FAIL") name)))
    (finish-output))
  (format t "~&@@ANSI DONE~%"))
