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
;; variables at their standard values.  *read-eval* stays NIL: a world's
;; reader never evaluates.
(defmacro with-standard-io-syntax (&body body)
  `(let ((*package* (find-package "COMMON-LISP-USER"))
         (*print-array* t) (*print-base* 10) (*print-case* :upcase)
         (*print-circle* nil) (*print-escape* t) (*print-gensym* t)
         (*print-length* nil) (*print-level* nil) (*print-lines* nil)
         (*print-miser-width* nil) (*print-pretty* nil) (*print-radix* nil)
         (*print-readably* t) (*print-right-margin* nil)
         (*read-base* 10) (*read-default-float-format* 'single-float)
         (*read-eval* nil) (*read-suppress* nil))
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

;; String streams know no external formats.
(defun stream-external-format (stream)
  (check-type stream stream)
  :default)

;; A world holds no pathnames.
(defun pathnamep (object) (declare (ignore object)) nil)

;; Readtables exist as values (copied, compared, stored) but the reader's
;; syntax is fixed: a world's source must read the same way in every
;; transaction.  A readtable's case is :upcase and stays so; the functions
;; that would change a syntax are refused.
(defstruct (readtable (:constructor %make-readtable) (:copier nil) (:predicate readtablep))
  (case :upcase))

(defvar *readtable* (%make-readtable))

(defun copy-readtable (&optional (from *readtable*) to)
  (when from (check-type from readtable))
  (if to
      (progn (check-type to readtable) to)
      (%make-readtable)))

(defun (setf readtable-case) (mode readtable)
  (check-type readtable readtable)
  (check-type mode (member :upcase :downcase :preserve :invert))
  (unless (eq mode :upcase)
    (error "READTABLE-CASE ~s: the reader's syntax is fixed: a world's source must read the same way in every transaction" mode))
  mode)

;; The pretty printer's directives.  Without a pretty printer (no stream is
;; a pretty-printing stream) newlines, indentation and tabs do nothing, and
;; the list printers print the list's elements separated by spaces.
(defun %pprint-stream (stream)
  (cond ((null stream) *standard-output*) ((eq stream t) *standard-output*) (t stream)))

(defun pprint-newline (kind &optional stream)
  (check-type kind (member :linear :fill :miser :mandatory))
  (%pprint-stream stream)
  nil)

(defun pprint-indent (relative-to n &optional stream)
  (check-type relative-to (member :block :current))
  (check-type n real)
  (%pprint-stream stream)
  nil)

(defun pprint-tab (kind colnum colinc &optional stream)
  (check-type kind (member :line :section :line-relative :section-relative))
  (check-type colnum (integer 0))
  (check-type colinc (integer 0))
  (%pprint-stream stream)
  nil)

;; The elements separated by a space, or (TABSIZE) each starting a column
;; that is a multiple of TABSIZE from the first.
(defun %pprint-list (stream list colon-p &optional tabsize)
  (let ((stream (%pprint-stream stream)) (column 0))
    (if (not (listp list))
        (prin1 list stream)
        (progn
          (when colon-p (write-char #\( stream))
          (loop for tail on list
                for first = t then nil
                do (unless first
                     (let ((pad (if tabsize (- tabsize (mod column tabsize)) 1)))
                       (dotimes (i pad) (write-char #\Space stream))
                       (incf column pad)))
                   (let ((text (prin1-to-string (car tail))))
                     (write-string text stream)
                     (incf column (length text)))
                   (unless (listp (cdr tail))
                     (write-string " . " stream)
                     (prin1 (cdr tail) stream)))
          (when colon-p (write-char #\) stream))))
    nil))

(defun pprint-fill (stream list &optional (colon-p t) at-sign-p)
  (declare (ignore at-sign-p))
  (%pprint-list stream list colon-p))

(defun pprint-linear (stream list &optional (colon-p t) at-sign-p)
  (declare (ignore at-sign-p))
  (%pprint-list stream list colon-p))

(defun pprint-tabular (stream list &optional (colon-p t) at-sign-p (tabsize 16))
  (declare (ignore at-sign-p))
  (check-type tabsize (integer 1))
  (%pprint-list stream list colon-p tabsize))

;; (character designator): a character, a string of one character, or a
;; symbol whose name is one character.
(defun character (object)
  (cond ((characterp object) object)
        ((and (stringp object) (= (length object) 1)) (char object 0))
        ((and (symbolp object) (= (length (symbol-name object)) 1)) (char (symbol-name object) 0))
        (t (error 'type-error :datum object :expected-type '(or character (string 1))))))
