;;;; harness.lisp -- a tiny assertion library for the jiti Lisp test suites.
;;;;
;;;; Portable Common Lisp: every suite must pass under SBCL as well as jiti.
;;;;   sbcl --noinform --non-interactive --load tests/lisp/harness.lisp --load tests/lisp/lists.lisp
;;;;   build/jiti run tests/lisp/harness.lisp tests/lisp/lists.lisp
;;;;
;;;; Interface:
;;;;   (suite "name")                 start a suite
;;;;   (is form)                      form is true
;;;;   (is-eql form expected)         EQL
;;;;   (is-equal form expected)       EQUAL
;;;;   (is-equalp form expected)      EQUALP
;;;;   (is-print form "string")       (prin1-to-string form) STRING= "string"
;;;;   (signals type form)            evaluating form signals a condition of TYPE
;;;;   (done)                         print "name: P passed, F failed"; error if F > 0

;; The suites read and print floats as double-floats by default (a float
;; written 1.5 is a double, printed without a marker); single-floats are
;; written with f0 and tested with *read-default-float-format* bound.
(setf *read-default-float-format* 'double-float)
;; Keep SBCL quiet (no compiler diagnostics): only summary and FAIL lines are
;; printed.  LOAD rebinds the compiler policy per file, so use the evaluator.
;; (No package prefix here, so that readers without packages can skip it.)
#+sbcl (setf (symbol-value (find-symbol "*EVALUATOR-MODE*" "SB-EXT")) :interpret)

(defvar *suite-name* "unnamed")
(defvar *suite-passed* 0)
(defvar *suite-failed* 0)
(defvar *suite-index* 0)

(defun suite (name)
  (setq *suite-name* name)
  (setq *suite-passed* 0)
  (setq *suite-failed* 0)
  (setq *suite-index* 0)
  name)

(defun %pass ()
  (incf *suite-passed*)
  t)

(defun %fail (whole detail)
  (incf *suite-failed*)
  (let ((*print-pretty* nil))
    (format t "~&FAIL ~a #~d: ~s ~a~%" *suite-name* *suite-index* whole detail))
  nil)

(defun %describe-condition (c)
  (let ((text (handler-case (let ((*print-pretty* nil)) (princ-to-string c))
                (error () "?"))))
    (format nil "~s (~a)" (type-of c) text)))

;; Evaluate THUNK; return (values value nil) or (values nil condition).
(defun %try (thunk)
  (handler-case (values (funcall thunk) nil)
    (error (c) (values nil c))))

(defun %check (whole test actual-fn expected-fn)
  (incf *suite-index*)
  (multiple-value-bind (expected eerr) (%try expected-fn)
    (multiple-value-bind (actual aerr) (%try actual-fn)
      (let ((*print-pretty* nil))
       (cond (eerr (%fail whole (format nil "expected value signalled ~a"
                                       (%describe-condition eerr))))
            (aerr (%fail whole (format nil "signalled ~a" (%describe-condition aerr))))
            ((funcall test actual expected) (%pass))
            (t (%fail whole (format nil "got ~s expected ~s" actual expected))))))))

(defmacro is (form)
  `(%check '(is ,form)
           (lambda (actual expected) expected actual)
           (lambda () ,form)
           (lambda () t)))

(defmacro is-eql (form expected)
  `(%check '(is-eql ,form ,expected) #'eql (lambda () ,form) (lambda () ,expected)))

(defmacro is-equal (form expected)
  `(%check '(is-equal ,form ,expected) #'equal (lambda () ,form) (lambda () ,expected)))

(defmacro is-equalp (form expected)
  `(%check '(is-equalp ,form ,expected) #'equalp (lambda () ,form) (lambda () ,expected)))

(defmacro is-print (form expected)
  `(%check '(is-print ,form ,expected)
           (lambda (actual expected)
             (and (stringp actual) (string= actual expected)))
           (lambda () (prin1-to-string ,form))
           (lambda () ,expected)))

(defmacro signals (type form)
  `(progn
     (incf *suite-index*)
     (handler-case (let ((value ,form))
                     (%fail '(signals ,type ,form)
                            (format nil "returned normally with ~s" value)))
       (,type () (%pass))
       (error (c)
         (%fail '(signals ,type ,form)
                (format nil "signalled ~a instead" (%describe-condition c)))))))

(defun done ()
  (format t "~&~a: ~d passed, ~d failed~%" *suite-name* *suite-passed* *suite-failed*)
  (when (> *suite-failed* 0)
    (error "~d assertion(s) failed in suite ~a" *suite-failed* *suite-name*))
  t)
