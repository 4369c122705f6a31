;;;; 55-io.lisp — the rest of the standard's printing and stream names that
;;;; have a meaning inside a world: standard syntax, formatter, the pretty
;;;; printer's directives (there is no pretty printer: they print plainly),
;;;; the REPL's variables, and the predicates of objects a world never holds.

;; The REPL's history variables (CLHS 25.1.1): set by a listener's forms
;; (jiti_form_eval_listening: jiti repl), NIL until one ran.  They are the
;; kernel's, never the world's.
(defvar * nil)
(defvar ** nil)
(defvar *** nil)
(defvar + nil)
(defvar ++ nil)
(defvar +++ nil)
(defvar / nil)
(defvar // nil)
(defvar /// nil)
(defvar - nil)

;; Loading and compiling files does not exist; the variables that would
;; say how chatty they are do, for code that binds or reads them.
(defvar *compile-print* nil)
(defvar *compile-verbose* nil)
(defvar *load-print* nil)
(defvar *load-verbose* nil)

;; The pretty printer's margins: there is no pretty printer, so nothing
;; reads them.
(defvar *print-lines* nil)
(defvar *print-miser-width* nil)
(defvar *print-right-margin* nil)

;; The format of a float read without exponent marker (or with e), and
;; printed without one: single-float (short-float) or double-float
;; (long-float).
(defvar *read-default-float-format* 'single-float)

;; (with-standard-io-syntax &body body): BODY with the reader and printer
;; variables at their standard values, the standard readtable among them.
(defmacro with-standard-io-syntax (&body body)
  `(let ((*package* (find-package "COMMON-LISP-USER"))
         (*print-array* t) (*print-base* 10) (*print-case* :upcase)
         (*print-circle* nil) (*print-escape* t) (*print-gensym* t)
         (*print-length* nil) (*print-level* nil) (*print-lines* nil)
         (*print-miser-width* nil) (*print-pretty* nil) (*print-radix* nil)
         (*print-readably* t) (*print-right-margin* nil)
         (*read-base* 10) (*read-default-float-format* 'single-float)
         (*read-eval* t) (*read-suppress* nil) (*readtable* *%standard-readtable*)
         (*print-pprint-dispatch* *%standard-pprint-dispatch*))
     ,@body))

;; (with-open-stream (var stream) &body body): closed however BODY exits.
(defmacro with-open-stream ((var stream) &body body)
  (multiple-value-bind (decls forms) (%parse-body body)
    `(let ((,var ,stream))
       ,@decls
       (unwind-protect (progn ,@forms) (close ,var)))))

;; (formatter control-string) => a function (stream &rest args) that formats
;; ARGS under CONTROL-STRING and returns the ones it did not use.
(defmacro formatter (control)
  (check-type control string)
  (let ((stream (gensym "STREAM")) (args (gensym "ARGS")))
    `(function (lambda (,stream &rest ,args)
                 (%format-with-rest ,stream ,control ,args)))))

;; The streams of a world know no external formats.
(defun stream-external-format (stream)
  (check-type stream stream)
  :default)

;; (y-or-n-p &optional control &rest arguments) and yes-or-no-p: ask on
;; *query-io* (the question formatted from CONTROL, on a fresh line) and
;; read lines from it until one answers: y or n (yes or no for yes-or-no-p,
;; which takes no single letter), in either case.  A world has no terminal:
;; *query-io* reads the empty *standard-input* unless the program binds it
;; (a two-way stream of its answers, say), and at its end READ-LINE signals
;; END-OF-FILE.
(defun %ask (control arguments yes no hint)
  (loop
    (when control
      (fresh-line *query-io*)
      (apply #'format *query-io* control arguments)
      (write-string hint *query-io*))
    (finish-output *query-io*)
    (let ((answer (string-trim '(#\Space #\Tab #\Return) (read-line *query-io*))))
      (cond ((member answer yes :test #'string-equal) (return t))
            ((member answer no :test #'string-equal) (return nil))
            (t (format *query-io* "~&Please answer ~a or ~a.~%" (first yes) (first no)))))))

(defun y-or-n-p (&optional control &rest arguments)
  (%ask control arguments '("y" "yes") '("n" "no") " (y or n) "))

(defun yes-or-no-p (&optional control &rest arguments)
  (%ask control arguments '("yes") '("no") " (yes or no) "))

;; A world holds no pathnames.
(defun pathnamep (object) (declare (ignore object)) nil)

;; Readtables.  read.c reads them: CASE is the readtable case; SYNTAX is
;; NIL (every character has its standard syntax) or an EQL hash table from
;; a character to its syntax where that differs from the standard one:
;;   1 whitespace, 2 constituent, 3 single escape, 4 multiple escape;
;;   (FUNCTION . NON-TERMINATING-P): a macro character, FUNCTION being a
;;     character for that character's standard reader macro;
;;   #(NON-TERMINATING-P TABLE STANDARD-P): a dispatching macro character,
;;     TABLE from an upcased sub-character to a function, a character (that
;;     sub-character's standard meaning) or NIL (none); sub-characters not
;;     in TABLE have their standard # meaning when STANDARD-P.
;; Only a program's reads consult *readtable*; the kernel reads the source
;; it is given with the standard syntax, so the world's stored source always
;; reads the same way.  A world keeps its *readtable* and the readtables its
;; variables and rows hold (world.c, export.c): a function in one is kept
;; by name, a symbol.  SYNTAX is the slot's stored name (a %-name could not
;; be stored); %READTABLE-SYNTAX reads it.
(defstruct (readtable (:constructor %make-readtable) (:copier nil) (:predicate readtablep))
  (case :upcase)
  (syntax nil))
(fmakunbound 'readtable-syntax)

(defun %readtable-syntax (readtable) (%struct-ref readtable 'readtable 1))
(defun (setf %readtable-syntax) (value readtable) (%struct-set readtable 'readtable 1 value))

(defvar *readtable* (%make-readtable))

;; The standard readtable (with-standard-io-syntax binds it); it may not be
;; changed.
(defvar *%standard-readtable* (%make-readtable))

(defun %standard-syntax (char)
  (cond ((member char '(#\Tab #\Newline #\Linefeed #\Page #\Return #\Space)) 1)
        ((find char "()'\";`,") (cons char nil))
        ((char= char #\#) (vector t nil t))
        ((char= char #\\) 3)
        ((char= char #\|) 4)
        (t 2)))

;; The functions standing for the standard macro characters and # sub-
;; characters, made once so that they stay EQ.
(defvar *%standard-macro-functions*
  (map 'list (lambda (k) (cons k (lambda (stream char) (%standard-reader-macro stream char k))))
       "()'\";`,#"))
(defvar *%standard-dispatch-functions*
  (map 'list (lambda (k) (cons k (lambda (stream char arg) (%standard-dispatch-macro stream char arg k))))
       "\\'(SPC:|+-BOXR*A=#."))

(defun %check-readtable (readtable)
  (check-type readtable readtable)
  (when (eq readtable *%standard-readtable*)
    (error "the standard readtable cannot be changed: change a copy (copy-readtable nil)"))
  readtable)

(defun %syntax-entry (char readtable)
  (let ((table (%readtable-syntax readtable)))
    (multiple-value-bind (e found) (if table (gethash char table) (values nil nil))
      (if found e (%standard-syntax char)))))

(defun %set-syntax-entry (readtable char entry)
  (setf (gethash char (or (%readtable-syntax readtable)
                          (setf (%readtable-syntax readtable) (make-hash-table))))
        entry))

(defun %copy-syntax-entry (e)
  (if (vectorp e)
      (let ((table (make-hash-table)))
        (when (svref e 1)
          (maphash (lambda (k v) (setf (gethash k table) v)) (svref e 1)))
        (vector (svref e 0) table (svref e 2)))
      e))

(defun copy-readtable (&optional (from *readtable*) to)
  (let ((from (if from (progn (check-type from readtable) from) *%standard-readtable*))
        (to (if to (%check-readtable to) (%make-readtable))))
    (let ((syntax (%readtable-syntax from)) (copy nil))
      (when syntax
        (setq copy (make-hash-table))
        (maphash (lambda (k v) (setf (gethash k copy) (%copy-syntax-entry v))) syntax))
      (setf (%readtable-syntax to) copy))
    (%struct-set to 'readtable 0 (readtable-case from))
    to))

(defun (setf readtable-case) (mode readtable)
  (check-type readtable readtable)
  (check-type mode (member :upcase :downcase :preserve :invert))
  (%check-readtable readtable)
  (%struct-set readtable 'readtable 0 mode))

(defun %macro-function-of (k)
  (cdr (assoc k *%standard-macro-functions*)))

(defun %standard-function-char (fn alist)
  (or (car (rassoc fn alist)) fn))

(defun get-macro-character (char &optional (readtable *readtable*))
  (check-type char character)
  (let ((e (%syntax-entry char (or readtable *%standard-readtable*))))
    (cond ((consp e)
           (values (if (characterp (car e)) (%macro-function-of (car e)) (car e)) (and (cdr e) t)))
          ((vectorp e) (values (%macro-function-of #\#) (and (svref e 0) t)))
          (t (values nil nil)))))

(defun set-macro-character (char new-function &optional non-terminating-p (readtable *readtable*))
  (check-type char character)
  (%check-readtable readtable)
  (%set-syntax-entry readtable char
                     (cond ((null new-function) 2)   ; no longer a macro character
                           ((eq new-function (%macro-function-of #\#))
                            (vector (and non-terminating-p t) (make-hash-table) t))
                           (t (cons (%standard-function-char new-function *%standard-macro-functions*)
                                    (and non-terminating-p t)))))
  t)

(defun make-dispatch-macro-character (char &optional non-terminating-p (readtable *readtable*))
  (check-type char character)
  (%check-readtable readtable)
  (%set-syntax-entry readtable char (vector (and non-terminating-p t) (make-hash-table) nil))
  t)

(defun %dispatch-entry (disp-char readtable)
  (let ((e (%syntax-entry disp-char readtable)))
    (unless (vectorp e)
      (error 'simple-error :format-control "~s is not a dispatching macro character"
                           :format-arguments (list disp-char)))
    e))

(defun set-dispatch-macro-character (disp-char sub-char new-function &optional (readtable *readtable*))
  (check-type disp-char character)
  (check-type sub-char character)
  (%check-readtable readtable)
  (when (digit-char-p sub-char)
    (error "~s: a decimal digit cannot be a dispatch sub-character (it is the argument)" sub-char))
  (let ((e (%dispatch-entry disp-char readtable)))
    (unless (svref e 1)
      (setq e (%set-syntax-entry readtable disp-char (vector (svref e 0) (make-hash-table) (svref e 2)))))
    (setf (gethash (char-upcase sub-char) (svref e 1))
          (%standard-function-char new-function *%standard-dispatch-functions*))
    t))

(defun get-dispatch-macro-character (disp-char sub-char &optional (readtable *readtable*))
  (check-type disp-char character)
  (check-type sub-char character)
  (let ((e (%dispatch-entry disp-char (or readtable *%standard-readtable*)))
        (sub (char-upcase sub-char)))
    (unless (digit-char-p sub)
      (multiple-value-bind (f found) (if (svref e 1) (gethash sub (svref e 1)) (values nil nil))
        (cond (found (if (characterp f) (cdr (assoc f *%standard-dispatch-functions*)) f))
              ((svref e 2) (cdr (assoc sub *%standard-dispatch-functions*))))))))

(defun set-syntax-from-char (to-char from-char &optional (to-readtable *readtable*) from-readtable)
  (check-type to-char character)
  (check-type from-char character)
  (%check-readtable to-readtable)
  (let ((from (if from-readtable (progn (check-type from-readtable readtable) from-readtable)
                  *%standard-readtable*)))
    (%set-syntax-entry to-readtable to-char (%copy-syntax-entry (%syntax-entry from-char from))))
  t)

;; (character designator): a character, a string of one character, or a
;; symbol whose name is one character.
(defun character (object)
  (cond ((characterp object) object)
        ((and (stringp object) (= (length object) 1)) (char object 0))
        ((and (symbolp object) (= (length (symbol-name object)) 1)) (char (symbol-name object) 0))
        (t (error 'type-error :datum object :expected-type '(or character (string 1))))))
