;;;; check-sbcl.lisp — prove the repair benchmark's cases under SBCL, the
;;;; reference implementation, without jiti: each bug is real, each scripted
;;;; verdict is what its "# bench:" line says it is.
;;;;
;;;;   sbcl --noinform --non-interactive --no-userinit --load bench/repair/check-sbcl.lisp \
;;;;        --eval '(repair-bench-check:main "bench/repair/cases")'
;;;;   (or bash bench/repair/check-sbcl.sh [CASE...])
;;;;
;;;; Every world below is a fresh package, so the cases (and the answers of
;;;; one case) never see each other's definitions.  A world replays what the
;;;; harness does to a jiti kernel: app.lisp, the traffic calls, the failing
;;;; call (its error caught: jiti undoes the failed call's transaction, so a
;;;; failing call must change nothing before it signals), then a verdict's
;;;; source.  For each case it checks:
;;;;   - the file conventions the harness relies on (one form per line that
;;;;     starts with "(" in traffic.lisp, invariants.lisp and failing.lisp);
;;;;   - on the buggy world: every invariant holds, every traffic call
;;;;     succeeds, the failing call signals an error; for a repair case the
;;;;     oracle finds at least one wrong result (the bug is real), for an
;;;;     `expected` case it finds none;
;;;;   - each verdict is one the supervisor accepts (its type, its fields);
;;;;   - each verdict against its claim:
;;;;       correct        repro passes, invariants hold, the traffic replays
;;;;                      as on the unchanged world (or the verdict names
;;;;                      intended changes), the oracle agrees everywhere;
;;;;       passes-wrong   the same checks pass, and the oracle disagrees;
;;;;       identical      the source is the live definition of the function;
;;;;       invariant      the repro passes and an invariant fails;
;;;;       traffic        the repro and invariants pass, a recorded call's
;;;;                      result changes, and no change is declared;
;;;;       scope          the source defines a function other than the
;;;;                      failing one;
;;;;       expected       the verdict is `expected`.
;;;;   - the last verdict is the one the case is scored on: `correct`,
;;;;     `passes-wrong` or `expected`.

(defpackage :repair-bench-check
  (:use :cl)
  (:export #:main))
(in-package :repair-bench-check)

;;; ------------------------------------------------------------ files

(defun file-string (path)
  (with-open-file (in path :external-format :utf-8)
    (let ((s (make-string (file-length in))))
      (subseq s 0 (read-sequence s in)))))

(defun file-lines (path)
  (with-open-file (in path :external-format :utf-8)
    (loop for line = (read-line in nil) while line collect line)))

(defun read-all (string)
  "Every form of STRING, read in *PACKAGE*."
  (let ((*read-eval* nil))
    (with-input-from-string (in string)
      (loop with eof = '#:eof
            for form = (read in nil eof)
            until (eq form eof)
            collect form))))

(defun case-file (dir name) (merge-pathnames name dir))

;;; ------------------------------------------------------------ JSON (enough for scripted.jsonl)

(defun json-parse (string)
  (let ((pos 0) (n (length string)))
    (labels ((peek () (and (< pos n) (char string pos)))
             (next () (prog1 (char string pos) (incf pos)))
             (ws () (loop while (and (< pos n) (member (peek) '(#\Space #\Tab #\Return #\Newline))) do (incf pos)))
             (expect (c) (ws) (unless (eql (next) c) (error "JSON: expected ~a at ~d in ~a" c pos string)))
             (word (w val) (if (and (<= (+ pos (length w)) n) (string= w string :start2 pos :end2 (+ pos (length w))))
                               (progn (incf pos (length w)) val)
                               (error "JSON: bad literal at ~d" pos)))
             (str ()
               (expect #\")
               (with-output-to-string (out)
                 (loop for c = (next)
                       until (char= c #\")
                       do (if (char= c #\\)
                              (let ((e (next)))
                                (case e
                                  (#\n (write-char #\Newline out))
                                  (#\t (write-char #\Tab out))
                                  (#\r (write-char #\Return out))
                                  (#\b (write-char #\Backspace out))
                                  (#\f (write-char #\Page out))
                                  (#\u (let ((code (parse-integer string :start pos :end (+ pos 4) :radix 16)))
                                         (incf pos 4)
                                         (write-char (code-char code) out)))
                                  (t (write-char e out))))
                              (write-char c out)))))
             (value ()
               (ws)
               (case (peek)
                 (#\" (str))
                 (#\{ (next)
                  (ws)
                  (if (eql (peek) #\})
                      (progn (next) '())
                      (loop collect (let ((k (str))) (expect #\:) (cons k (value)))
                            do (ws)
                            until (eql (peek) #\})
                            do (expect #\,)
                            finally (next))))
                 (#\n (word "null" :null))
                 (#\t (word "true" t))
                 (#\f (word "false" :false))
                 (t (let ((start pos))
                      (loop while (and (< pos n) (find (peek) "-+.0123456789eE")) do (incf pos))
                      (let ((*read-eval* nil)) (read-from-string string t nil :start start :end pos)))))))
      (prog1 (value) (ws) (unless (= pos n) (error "JSON: trailing text in ~a" string))))))

(defun jget (obj key) (cdr (assoc key obj :test #'string=)))

(defstruct verdict claim type source reason intended line keys)

(defparameter *verdict-fields*
  '(("repair" ("source" "reason") ("intended_changes"))
    ("expected" ("reason") ())
    ("insufficient_evidence" ("reason") ()))
  "Each verdict type with its required fields and its optional ones, as the
supervisor's action table has them (controller/model/maction.c).")

(defun read-verdicts (path)
  "The verdicts of scripted.jsonl, each with the claim of the \"# bench:\"
line before it."
  (let ((claim nil) (out '()) (no 0))
    (dolist (line (file-lines path) (nreverse out))
      (incf no)
      (let ((trimmed (string-trim " " line)))
        (cond ((zerop (length trimmed)))
              ((and (> (length trimmed) 8) (string= "# bench:" trimmed :end2 8))
               (setf claim (string-trim " " (subseq trimmed 8))))
              ((char= (char trimmed 0) #\#))
              (t (let ((j (json-parse trimmed)))
                   (unless claim (error "~a line ~d: a verdict without a \"# bench:\" line before it" path no))
                   (push (make-verdict :claim claim :type (jget j "type") :source (jget j "source")
                                       :reason (jget j "reason")
                                       :intended (let ((i (jget j "intended_changes"))) (and (stringp i) i))
                                       :line no :keys (mapcar #'car j))
                         out)
                   (setf claim nil))))))))

;;; ------------------------------------------------------------ worlds

(defvar *world-counter* 0)

(defmacro quietly (&body body)
  "BODY with its output and warnings swallowed (the application may print)."
  `(let ((*standard-output* (make-broadcast-stream))
         (*error-output* (make-broadcast-stream)))
     (handler-bind ((warning #'muffle-warning))
       ,@body)))

(defun printed (form)
  "What the harness compares: FORM's value as PRIN1 prints it, or :ERROR."
  (handler-case (let ((*print-pretty* nil)) (quietly (prin1-to-string (eval form))))
    (error () :error)))

(defun signals-p (form)
  (handler-case (progn (quietly (eval form)) nil)
    (error (c) c)))

(defstruct (kase (:conc-name case-)) dir name app function invariants traffic failing oracle verdicts)

(defun forms-in (kase file package)
  (let ((*package* package)) (read-all (file-string (case-file (case-dir kase) file)))))

(defun new-world (kase &optional source)
  "A package holding KASE's application after its traffic and its failing
call, with SOURCE (a verdict's) evaluated last.  Returns the package."
  (let ((*package* (make-package (format nil "RB-~a-~d" (case-name kase) (incf *world-counter*)) :use '(:cl))))
    (dolist (f (read-all (case-app kase))) (quietly (eval f)))
    (dolist (f (forms-in kase "traffic.lisp" *package*)) (printed f))
    (signals-p (first (forms-in kase "failing.lisp" *package*)))
    (when source (dolist (f (read-all source)) (quietly (eval f))))
    *package*))

(defmacro in-world ((package) &body body)
  `(let ((*package* ,package)) ,@body))

(defun world-forms (kase file) (forms-in kase file *package*))

(defun oracle-results (kase)
  "((form expected got) ...) in the current world, in order."
  (loop for (form . expected) in (first (world-forms kase "oracle.lisp"))
        collect (list form expected (printed form))))

(defun oracle-wrong (results)
  (remove-if (lambda (r) (equal (second r) (third r))) results))

(defun invariants-failing (kase)
  (remove-if (lambda (f) (handler-case (quietly (eval f)) (error () nil))) (world-forms kase "invariants.lisp")))

(defun replay (kase) (mapcar #'printed (world-forms kase "traffic.lisp")))

(defun defined-names (source)
  "The names SOURCE's top-level forms define (through PROGN)."
  (let ((names '()))
    (labels ((walk (f)
               (when (consp f)
                 (case (first f)
                   (progn (mapc #'walk (rest f)))
                   ((defun defmacro defgeneric defmethod defvar defparameter defclass defstruct)
                    (push (if (consp (second f)) (first (second f)) (second f)) names))))))
      (mapc #'walk (read-all source)))
    (nreverse names)))

(defun live-definition (kase)
  "The last DEFUN of the case's function in app.lisp."
  (let ((fn (case-function kase)) (last nil))
    (dolist (f (read-all (case-app kase)) last)
      (when (and (consp f) (eq (first f) 'defun) (string= (symbol-name (second f)) fn))
        (setf last f)))))

;;; ------------------------------------------------------------ checking one case

(defvar *failures* 0)

(defun fail (kase fmt &rest args)
  (incf *failures*)
  (let ((*print-pretty* nil))
    (format t "FAIL ~a: ~?~%" (case-name kase) fmt args)))

(defun check-one-form-a-line (kase file)
  (let* ((lines (file-lines (case-file (case-dir kase) file)))
         (starts (count-if (lambda (l) (and (plusp (length l)) (char= (char l 0) #\())) lines))
         (forms (length (read-all (file-string (case-file (case-dir kase) file))))))
    (unless (= starts forms)
      (fail kase "~a has ~d forms but ~d lines starting with \"(\": each form must start a line, ~
                  and only forms may" file forms starts))))

(defun load-case (dir)
  (let* ((dir (pathname (if (char= (char dir (1- (length dir))) #\/) dir (concatenate 'string dir "/"))))
         (name (car (last (pathname-directory dir)))))
    (make-kase :dir dir :name name
               :app (file-string (case-file dir "app.lisp"))
               :function (string-upcase (string-trim '(#\Space #\Newline #\Tab) (file-string (case-file dir "function"))))
               :verdicts (read-verdicts (case-file dir "scripted.jsonl")))))

(defun check-verdict-fields (kase v what)
  "The verdict is one the supervisor accepts: a known type, its required
fields, nothing else (the scripted model's lines are validated as a real
model's answers are)."
  (let ((spec (assoc (verdict-type v) *verdict-fields* :test #'equal)))
    (if (null spec)
        (fail kase "~a: the type ~s is no verdict (repair, expected, insufficient_evidence)" what (verdict-type v))
        (destructuring-bind (required optional) (rest spec)
          (dolist (k required)
            (unless (member k (verdict-keys v) :test #'string=)
              (fail kase "~a: a ~a verdict needs ~s" what (verdict-type v) k)))
          (dolist (k (verdict-keys v))
            (unless (member k (append '("type") required optional) :test #'string=)
              (fail kase "~a: a ~a verdict has no field ~s" what (verdict-type v) k)))))))

(defun check-verdict (kase v unchanged-replay)
  (let ((claim (verdict-claim v)) (what (format nil "verdict at line ~d (~a)" (verdict-line v) (verdict-claim v))))
    (check-verdict-fields kase v what)
    (cond
      ((string= claim "expected")
       (unless (equal (verdict-type v) "expected") (fail kase "~a is a ~a, not expected" what (verdict-type v))))
      ((not (equal (verdict-type v) "repair"))
       (fail kase "~a: a ~a verdict; the claims other than expected go with repair" what (verdict-type v)))
      ((string= claim "identical")
       (let ((forms (let ((*package* (new-world kase))) (list (read-all (verdict-source v)) (live-definition kase)))))
         (unless (equal (first forms) (list (second forms)))
           (fail kase "~a differs from the live definition of ~a" what (case-function kase)))))
      ((string= claim "scope")
       (let ((others (remove (case-function kase) (defined-names (verdict-source v)) :key #'symbol-name :test #'string=)))
         (unless others (fail kase "~a defines no function but ~a" what (case-function kase)))))
      (t
       (let* ((w (new-world kase (verdict-source v)))
              (failing (in-world (w) (first (world-forms kase "failing.lisp"))))
              (repro-error (in-world (w) (signals-p failing)))
              (bad-invariants (in-world (w) (invariants-failing kase)))
              (changed (in-world (w) (loop for got in (replay kase) for was in unchanged-replay
                                           for form in (world-forms kase "traffic.lisp")
                                           unless (equal got was) collect (list form was got))))
              (wrong (in-world ((new-world kase (verdict-source v))) (oracle-wrong (oracle-results kase))))
              (passes (and (not repro-error) (null bad-invariants) (or (null changed) (verdict-intended v)))))
         (flet ((need (ok fmt &rest args) (unless ok (apply #'fail kase (concatenate 'string "~a: " fmt) what args))))
           (cond
             ((string= claim "correct")
              (need (not repro-error) "the failing call still signals ~a" repro-error)
              (need (null bad-invariants) "invariants fail: ~s" bad-invariants)
              (need (or (null changed) (verdict-intended v)) "recorded results change, undeclared: ~s" changed)
              (need (null wrong) "the oracle disagrees: ~s" wrong))
             ((string= claim "passes-wrong")
              (need passes "it does not pass the checks (repro ~a, invariants ~s, traffic ~s)"
                    repro-error bad-invariants changed)
              (need (and wrong t) "the oracle agrees everywhere: it is not wrong"))
             ((string= claim "invariant")
              (need (not repro-error) "the failing call still signals ~a" repro-error)
              (need bad-invariants "every invariant holds"))
             ((string= claim "traffic")
              (need (not repro-error) "the failing call still signals ~a" repro-error)
              (need (null bad-invariants) "invariants fail: ~s" bad-invariants)
              (need (and changed (null (verdict-intended v))) "no recorded result changes undeclared"))
             (t (fail kase "~a: unknown claim ~s" what claim)))
           (values (length wrong) changed)))))))

(defun check-case (dir)
  (let* ((kase (load-case dir)) (*failures* 0))
    (dolist (f '("traffic.lisp" "invariants.lisp" "failing.lisp")) (check-one-form-a-line kase f))
    (let* ((verdicts (case-verdicts kase))
           (final (car (last verdicts)))
           (expected-case (and final (string= (verdict-claim final) "expected")))
           (w (new-world kase))
           (oracle-size 0)
           (before-wrong nil)
           (unchanged-replay nil))
      (unless verdicts (fail kase "scripted.jsonl holds no verdict"))
      (when (and final (not (member (verdict-claim final) '("correct" "passes-wrong" "expected") :test #'string=)))
        (fail kase "the last verdict is ~a; the case is scored on correct, passes-wrong or expected" (verdict-claim final)))
      (in-world (w)
        ;; the buggy world after app, traffic and failing call
        (let ((bad (invariants-failing kase)))
          (when bad (fail kase "invariants fail before any repair: ~s" bad)))
        (let ((results (oracle-results kase)))
          (setf oracle-size (length results) before-wrong (oracle-wrong results))))
      (let ((w2 (new-world kase)))
        (in-world (w2) (setf unchanged-replay (replay kase))))
      ;; the same steps one by one, to say which one breaks
      (let ((*package* (make-package (format nil "RB-~a-~d" (case-name kase) (incf *world-counter*)) :use '(:cl))))
        (dolist (f (read-all (case-app kase))) (quietly (eval f)))
        (dolist (f (world-forms kase "traffic.lisp"))
          (when (eq (printed f) :error) (fail kase "the traffic call ~s signals an error" f)))
        (let ((failing (world-forms kase "failing.lisp")))
          (unless (= (length failing) 1) (fail kase "failing.lisp must hold one form"))
          (unless (signals-p (first failing)) (fail kase "the failing call ~s does not signal" (first failing)))))
      (cond (expected-case
             (when before-wrong (fail kase "an expected case, yet the oracle disagrees with the application: ~s" before-wrong)))
            ((null before-wrong) (fail kase "the oracle agrees with the buggy application: the bug is not real")))
      (let ((notes '()))
        (dolist (v verdicts)
          (multiple-value-bind (wrong changed) (check-verdict kase v unchanged-replay)
            (push (format nil "~a~:[~2*~; (~d/~d oracle wrong)~]~@[ (changes ~d recorded)~]"
                          (verdict-claim v) (and wrong (plusp wrong)) wrong oracle-size
                          (and changed (length changed)))
                  notes)))
        (format t "~:[ok  ~;FAIL~] ~a ~a: bug ~d/~d oracle wrong; verdicts: ~{~a~^, ~}~%"
                (plusp *failures*) (case-name kase) (case-function kase)
                (length before-wrong) oracle-size (nreverse notes))))
    *failures*))

(defun case-dirs (root)
  (sort (mapcar #'namestring (directory (merge-pathnames "*/" (pathname (if (char= (char root (1- (length root))) #\/) root (concatenate 'string root "/"))))))
        #'string<))

(defun main (&rest dirs)
  "Check the case directories DIRS, or, when DIRS is one directory holding
cases, each case in it.  Exits 0 when every case checks, 1 otherwise."
  (let* ((dirs (if (and (= (length dirs) 1) (not (probe-file (merge-pathnames "app.lisp" (concatenate 'string (first dirs) "/")))))
                   (case-dirs (first dirs))
                   dirs))
         (failed 0))
    (dolist (d dirs)
      (handler-case (when (plusp (check-case d)) (incf failed))
        (error (c) (incf failed) (format t "FAIL ~a: ~a~%" d c))))
    (format t "~d case~:p, ~d failed~%" (length dirs) failed)
    (sb-ext:exit :code (if (zerop failed) 0 1))))
