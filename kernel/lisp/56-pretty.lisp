;;;; 56-pretty.lisp — the pretty printer's Lisp side: logical blocks, the
;;;; list printers and pprint dispatch tables.  The streams and the layout
;;;; are pretty.c's (%pp-begin, %pp-end, pprint-newline, pprint-indent,
;;;; pprint-tab).

(defun %pp-output-stream (designator)
  (cond ((null designator) *standard-output*)
        ((eq designator t) *terminal-io*)
        (t designator)))

;; Under *print-circle*, %pp-begin prints #n= before a shared object, or
;; #n# instead of the block (returning NIL) for one printed before.
(defun %pp-block (stream object prefix per-line-prefix suffix fn)
  (let ((ps (%pp-begin stream (or per-line-prefix prefix) (and per-line-prefix t) object)))
    (when ps
      (unwind-protect (funcall fn ps object)
        (%pp-end ps suffix)))))

(defun %pprint-logical-block (stream object prefix per-line-prefix suffix fn)
  (let ((stream (%pp-output-stream stream)))
    ;; an argument not given is :none
    (when (and (not (eq prefix :none)) (not (eq per-line-prefix :none)))
      (error "PPRINT-LOGICAL-BLOCK takes :PREFIX or :PER-LINE-PREFIX, not both"))
    (dolist (x (list prefix per-line-prefix suffix))
      (unless (or (eq x :none) (stringp x))
        (error 'type-error :datum x :expected-type 'string)))
    (when (eq prefix :none) (setq prefix nil))
    (when (eq per-line-prefix :none) (setq per-line-prefix nil))
    (when (eq suffix :none) (setq suffix ""))
    (cond ((not (listp object)) (write object :stream stream))
          ((and *print-level* (not *print-readably*)
                (>= (or (%pretty-stream-p stream) 0) *print-level*))
           (write-char #\# stream))
          (t (%pp-block stream object prefix per-line-prefix suffix fn)))
    nil))

;; What PPRINT-POP does before popping: true (the block ends) after
;; printing ". rest" for a dotted list, "..." past *print-length*, or
;; ". #n#" (". #n=(...)") for a tail printed before (shared).
(defun %pp-pop-ends (list count stream)
  (cond ((not (listp list))
         (write-string ". " stream)
         (write list :stream stream)
         t)
        ((and *print-length* (not *print-readably*) (>= count *print-length*))
         (write-string "..." stream)
         t)
        ((and list (plusp count) *print-circle* (%pp-circle-shared list stream))
         (write-string ". " stream)
         (write list :stream stream)
         t)))

(defmacro pprint-logical-block ((stream-symbol object &key (prefix :none)
                                                (per-line-prefix :none) (suffix :none))
                                &body body)
  (let* ((var (cond ((null stream-symbol) '*standard-output*)
                    ((eq stream-symbol t) '*terminal-io*)
                    (t stream-symbol)))
         (list (gensym "LIST")) (count (gensym "COUNT")) (blk (gensym "BLOCK"))
         (pop-form `(if (%pp-pop-ends ,list ,count ,var)
                        (return-from ,blk nil)
                        (progn (setq ,count (1+ ,count)) (pop ,list))))
         (exit-form `(if (null ,list) (return-from ,blk nil))))
    (multiple-value-bind (decls forms) (%parse-body body)
      `(%pprint-logical-block ,var ,object ,prefix ,per-line-prefix ,suffix
                              (lambda (,var ,list &aux (,count 0))
                                (declare (ignorable ,var ,list ,count))
                                (block ,blk
                                  (macrolet ((pprint-pop () ',pop-form)
                                             (pprint-exit-if-list-exhausted () ',exit-form))
                                    (locally ,@decls ,@forms))))))))

(defmacro pprint-pop ()
  (error "PPRINT-POP is used outside PPRINT-LOGICAL-BLOCK"))

(defmacro pprint-exit-if-list-exhausted ()
  (error "PPRINT-EXIT-IF-LIST-EXHAUSTED is used outside PPRINT-LOGICAL-BLOCK"))

;; The list printers (for ~/pprint-fill/ and friends): COLON-P puts the
;; list in parentheses.  Fill and linear differ only in the newline (KIND)
;; between the elements.
(defun %pprint-separated (stream list colon-p kind)
  (let ((stream (%pp-output-stream stream)))
    (pprint-logical-block (stream list :prefix (if colon-p "(" "") :suffix (if colon-p ")" ""))
      (pprint-exit-if-list-exhausted)
      (loop (write (pprint-pop) :stream stream)
            (pprint-exit-if-list-exhausted)
            (write-char #\Space stream)
            (pprint-newline kind stream)))))

(defun pprint-fill (stream list &optional (colon-p t) at-sign-p)
  (declare (ignore at-sign-p))
  (%pprint-separated stream list colon-p :fill))

(defun pprint-linear (stream list &optional (colon-p t) at-sign-p)
  (declare (ignore at-sign-p))
  (%pprint-separated stream list colon-p :linear))

(defun pprint-tabular (stream list &optional (colon-p t) at-sign-p (tabsize 16))
  (declare (ignore at-sign-p))
  (unless tabsize (setq tabsize 16))   ; ~/pprint-tabular/ without the parameter
  (check-type tabsize (integer 0))
  (let ((stream (%pp-output-stream stream)))
    (pprint-logical-block (stream list :prefix (if colon-p "(" "") :suffix (if colon-p ")" ""))
      (pprint-exit-if-list-exhausted)
      (loop (write (pprint-pop) :stream stream)
            (pprint-exit-if-list-exhausted)
            (write-char #\Space stream)
            (pprint-tab :section-relative 0 tabsize stream)
            (pprint-newline :fill stream)))))

;; Pprint dispatch tables.  ENTRIES are (type-specifier priority function)
;; lists, highest priority first (the latest first among equals).  The
;; standard table has none: what it does for code and data is the
;; printer's own (print.c), which consults a table only when it has
;; entries.  A table holds its functions as given: one naming its
;; functions by symbols can be kept in a world.
(defstruct (pprint-dispatch-table (:constructor %make-pprint-dispatch-table (&optional entries))
                                  (:copier nil))
  (entries nil))

(defvar *%standard-pprint-dispatch* (%make-pprint-dispatch-table))
(defvar *print-pprint-dispatch* (%make-pprint-dispatch-table))

(defun copy-pprint-dispatch (&optional (table *print-pprint-dispatch*))
  (cond ((null table) (%make-pprint-dispatch-table))
        ((pprint-dispatch-table-p table)
         (%make-pprint-dispatch-table (copy-list (pprint-dispatch-table-entries table))))
        (t (error 'type-error :datum table :expected-type '(or null pprint-dispatch-table)))))

(defun set-pprint-dispatch (type-specifier function &optional (priority 0)
                            (table *print-pprint-dispatch*))
  (unless (realp priority)
    (error 'type-error :datum priority :expected-type 'real))
  (unless (or (null function) (functionp function) (symbolp function))
    (error 'type-error :datum function :expected-type '(or null function symbol)))
  (unless (pprint-dispatch-table-p table)
    (error 'type-error :datum table :expected-type 'pprint-dispatch-table))
  (let ((rest (remove type-specifier (pprint-dispatch-table-entries table)
                      :key #'car :test #'equal)))
    (when function
      (setq rest (merge 'list (list (list type-specifier priority function)) rest
                        #'> :key #'cadr)))
    (setf (pprint-dispatch-table-entries table) rest))
  nil)

(defun %pprint-dispatch-entry (object table)
  (dolist (e (pprint-dispatch-table-entries table))
    (when (ignore-errors (typep object (car e)))
      (return e))))

;; Called by the printer for each object while the current table has
;; entries: the function to print OBJECT with, or NIL.
(defun %pprint-dispatch-function (object table)
  (third (%pprint-dispatch-entry object table)))

(defun %pprint-default (stream object)
  (let ((*print-pprint-dispatch* *%standard-pprint-dispatch*))
    (write object :stream stream)))

(defun pprint-dispatch (object &optional (table *print-pprint-dispatch*))
  (let ((table (or table *%standard-pprint-dispatch*)))
    (unless (pprint-dispatch-table-p table)
      (error 'type-error :datum table :expected-type '(or null pprint-dispatch-table)))
    (let ((e (%pprint-dispatch-entry object table)))
      (if e (values (third e) t) (values #'%pprint-default nil)))))
