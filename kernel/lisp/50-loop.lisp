;;;; 50-loop.lisp -- the LOOP macro (CLHS 6.1), written in Lisp.
;;;;
;;;; Uses only the base library (defmacro, defun, let/let*, labels, if/cond,
;;;; when/unless, tagbody/go, block/return-from, setq, rplacd,
;;;; dolist, append, reverse, assoc, symbol-name, string=, gensym, error).
;;;; Loop keywords are recognised by symbol NAME, so FOR, :FOR or a FOR from
;;;; any other package all work.
;;;;
;;;; Shape of the expansion of an extended loop:
;;;;
;;;;   (block NAME
;;;;     (let* (accumulators and internal temporaries)
;;;;       (let* (bindings of clause 1)
;;;;         (let* (bindings of clause 2) ...
;;;;           (tagbody
;;;;              initially-forms
;;;;              first-iteration code of FOR/AS/REPEAT clauses, in order
;;;;            #:NEXT
;;;;              main clauses (do, collect, while, when ...), in order
;;;;              stepping code of FOR/AS/REPEAT clauses, in order
;;;;              (go #:NEXT)
;;;;            %LOOP-END
;;;;              finally-forms
;;;;              (return-from NAME default-result))))))
;;;;
;;;; Each FOR/AS group (subclauses joined by AND) yields, for both the first
;;;; iteration and the later ones: assignments done in parallel, then the
;;;; termination tests (any true => go to %LOOP-END), then assignments that
;;;; derive the user variables from the stepped state (e.g. x := (car list)).
;;;; Clause bindings are one LET* per clause whose value forms are bound
;;;; before its variables, so `for x in x' sees the outer X, as in CLHS.
;;;;
;;;; The epilogue tag is the fixed symbol %LOOP-END, so LOOP-FINISH is a
;;;; plain global macro, (go %loop-end), that reaches the innermost
;;;; enclosing loop lexically -- no MACROLET needed.

(defmacro loop-finish ()
  '(go %loop-end))

(defun %loop-kwp (x name)
  (if (symbolp x)
      (if x (string= (symbol-name x) name) nil)
      nil))

(defun %loop-kw-in (x names)
  (if (if x (symbolp x) nil)
      (let ((n (symbol-name x))
            (found nil))
        (dolist (nm names)
          (if (string= n nm) (setq found t)))
        found)
      nil))

;;; Copy LIST onto the end of the collection whose last cons is TAIL; return
;;; the new last cons.  A dotted final atom is kept (as APPEND would).
(defun %loop-append-tail (tail list)
  (tagbody
   next
     (when (consp list)
       (rplacd tail (cons (car list) nil))
       (setq tail (cdr tail))
       (setq list (cdr list))
       (go next)))
  (when list
    (rplacd tail list))
  tail)

;;; Splice LIST itself onto TAIL (NCONC); return the new last cons.
(defun %loop-nconc-tail (tail list)
  (when (consp list)
    (rplacd tail list)
    (setq tail list)
    (tagbody
     next
       (when (consp (cdr tail))
         (setq tail (cdr tail))
         (go next))))
  tail)

(defun %loop-pattern-vars (pat)
  (cond ((null pat) nil)
        ((symbolp pat) (list pat))
        ((consp pat) (append (%loop-pattern-vars (car pat))
                             (%loop-pattern-vars (cdr pat))))
        (t (%loop-error "LOOP: ~s is not a valid loop variable" pat))))

(defun %loop-constant-p (form)
  (cond ((consp form) (eq (car form) 'quote))
        ((symbolp form) (or (null form) (eq form t)))
        (t t)))

(defun %loop-acc-kind (tok)
  (cond ((%loop-kw-in tok '("COLLECT" "COLLECTING")) "COLLECT")
        ((%loop-kw-in tok '("APPEND" "APPENDING")) "APPEND")
        ((%loop-kw-in tok '("NCONC" "NCONCING")) "NCONC")
        ((%loop-kw-in tok '("SUM" "SUMMING")) "SUM")
        ((%loop-kw-in tok '("COUNT" "COUNTING")) "COUNT")
        ((%loop-kw-in tok '("MAXIMIZE" "MAXIMIZING")) "MAXIMIZE")
        ((%loop-kw-in tok '("MINIMIZE" "MINIMIZING")) "MINIMIZE")
        (t nil)))

(defun %loop-acc-class (kind)
  (cond ((string= kind "COLLECT") "LIST")
        ((string= kind "APPEND") "LIST")
        ((string= kind "NCONC") "LIST")
        ((string= kind "SUM") "SUM")
        ((string= kind "COUNT") "SUM")
        (t "MINMAX")))

(defun %loop-selectable-p (tok)
  (if (%loop-acc-kind tok)
      t
      (%loop-kw-in tok '("DO" "DOING" "RETURN" "WHEN" "IF" "UNLESS"))))

(defun %loop-simple-p (forms)
  (let ((ok t))
    (dolist (f forms)
      (unless (consp f) (setq ok nil)))
    ok))

;; A malformed loop is a program-error.
(defun %loop-error (control &rest arguments)
  (error 'program-error :format-control control :format-arguments arguments))

(defun %loop-type-default (type)
  (cond ((%loop-kw-in type '("FIXNUM" "INTEGER" "NUMBER" "REAL" "RATIONAL" "BIT")) 0)
        ((%loop-kw-in type '("FLOAT" "SINGLE-FLOAT" "SHORT-FLOAT")) 0.0f0)
        ((%loop-kw-in type '("DOUBLE-FLOAT" "LONG-FLOAT")) 0.0d0)
        ((and (consp type) (%loop-kw-in (car type) '("INTEGER" "MOD" "SIGNED-BYTE" "UNSIGNED-BYTE"))) 0)
        (t nil)))

;; The default values of a destructured WITH: a tree shaped like PATTERN.
(defun %loop-type-defaults (pattern type)
  (cond ((null pattern) nil)
        ((symbolp pattern) (%loop-type-default type))
        ((consp type) (cons (%loop-type-defaults (car pattern) (car type))
                            (%loop-type-defaults (cdr pattern) (cdr type))))
        (t (cons (%loop-type-defaults (car pattern) type)
                 (%loop-type-defaults (cdr pattern) type)))))

(defun %loop-expand (forms)
  (let ((toks forms)
        (last-tok 'loop)
        (name nil)
        (started nil)
        (temps nil)          ; reversed bindings of the outermost LET*
        (groups nil)         ; reversed list of per-clause LET* binding lists
        (gvals nil)          ; value bindings of the FOR group being parsed
        (gvars nil)          ; variable bindings of the FOR group being parsed
        (prologue nil)
        (pre-code nil)
        (body-code nil)
        (step-code nil)
        (epilogue nil)
        (accs nil)
        (default-key (gensym))
        (result nil)
        (result-p nil)
        (cur-it nil)
        (it-used nil)
        (seen-vars nil)      ; every variable the loop binds: none twice
        (next-tag (gensym)))
    (labels
        ((more () (consp toks))
         (peek () (car toks))
         (peek-kw (nm) (if (consp toks) (%loop-kwp (car toks) nm) nil))
         (next-form ()
           (if (consp toks)
               (progn (setq last-tok (car toks)) (setq toks (cdr toks)) last-tok)
               (%loop-error "LOOP: missing form or variable after ~s" last-tok)))
         (temp (init)
           (let ((g (gensym)))
             (setq temps (cons (list g init) temps))
             g))
         (form-or-it ()
           (let ((f (next-form)))
             (if (if cur-it (%loop-kwp f "IT") nil)
                 (progn (setq it-used t) cur-it)
                 f)))
         (compound-forms ()
           (let ((fs nil))
             (tagbody
              again
                (when (if (more) (consp (peek)) nil)
                  (setq fs (cons (next-form) fs))
                  (go again)))
             (nreverse fs)))
         (skip-type ()
           (cond ((peek-kw "OF-TYPE") (next-form) (next-form))
                 ((and (more) (%loop-kw-in (peek) '("FIXNUM" "FLOAT" "T" "NIL")))
                  (next-form))
                 (t nil)))
         (check-var (var)
           (unless (or (symbolp var) (consp var))
             (%loop-error "LOOP: ~s is not a valid loop variable" var))
           (dolist (v (%loop-pattern-vars var))
             (when (member v seen-vars)
               (%loop-error "LOOP: the variable ~s is bound twice" v))
             (setq seen-vars (cons v seen-vars)))
           var)
         ;; Forms assigning the parts of FORM to the variables of PAT.
         (dsetq (pat form)
           (cond ((null pat) nil)
                 ((symbolp pat) (list (list 'setq pat form)))
                 (t (let ((src form) (pre nil))
                      (unless (symbolp form)
                        (setq src (temp nil))
                        (setq pre (list (list 'setq src form))))
                      (append pre
                              (dsetq (car pat) (list 'car src))
                              (dsetq (cdr pat) (list 'cdr src)))))))
         ;; LET* bindings destructuring FORM into PAT.
         (dbind (pat form)
           (cond ((null pat) nil)
                 ((symbolp pat) (list (list pat form)))
                 (t (let ((src form) (pre nil))
                      (unless (symbolp form)
                        (setq src (gensym))
                        (setq pre (list (list src form))))
                      (append pre
                              (dbind (car pat) (list 'car src))
                              (dbind (cdr pat) (list 'cdr src)))))))
         ;; Assign the (var value) PAIRS in parallel.
         (psetq-code (pairs)
           (if (null (cdr pairs))
               (if pairs (list (cons 'setq (car pairs))) nil)
               (let ((sets nil) (assigns nil) (rest pairs))
                 (tagbody
                  again
                    (when (cdr rest)
                      (let ((g (temp nil)))
                        (setq sets (cons (list 'setq g (car (cdr (car rest)))) sets))
                        (setq assigns (cons (list 'setq (car (car rest)) g) assigns)))
                      (setq rest (cdr rest))
                      (go again)))
                 (append (nreverse sets)
                         (list (cons 'setq (car rest)))
                         (nreverse assigns)))))
         (phase-code (pairs tests posts)
           (append (psetq-code pairs)
                   (cond ((null tests) nil)
                         ((null (cdr tests))
                          (list (list 'if (car tests) (list 'go '%loop-end))))
                         (t (list (list 'if (cons 'or tests) (list 'go '%loop-end)))))
                   posts))
         (gval (form)
           ;; bind FORM once, in source order, unless it is a constant
           (if (%loop-constant-p form)
               form
               (let ((g (gensym)))
                 (setq gvals (cons (list g form) gvals))
                 g)))
         (bind-pattern (var)
           (dolist (v (%loop-pattern-vars var))
             (setq gvars (cons (list v nil) gvars))))
         (by-step (lv by)
           (cond ((null by) (list 'cdr lv))
                 ((and (consp by) (consp (cdr by)) (symbolp (car (cdr by)))
                       (null (cdr (cdr by)))
                       (or (eq (car by) 'function) (eq (car by) 'quote)))
                  (list (car (cdr by)) lv))
                 (t (let ((g (gensym)))
                      (setq gvals (cons (list g by) gvals))
                      (list 'funcall g lv)))))
         ;; Each FOR/AS subclause parser returns
         ;; (first-pairs first-tests first-posts step-pairs step-tests step-posts).
         (iter-list (var list-form)
           (let ((lv (gensym)) (by nil))
             (setq gvals (cons (list lv list-form) gvals))
             (when (peek-kw "BY")
               (next-form)
               (setq by (next-form)))
             (let ((stepf (by-step lv by))
                   (test (list 'endp lv)))   ; a dotted list is a type-error
               (bind-pattern var)
               (list nil (list test) (dsetq var (list 'car lv))
                     (list (list lv stepf)) (list test)
                     (dsetq var (list 'car lv))))))
         (for-on (var)
           (let ((lst (next-form)) (by nil) (lv nil))
             (if (and var (symbolp var))
                 (progn (setq lv var) (setq gvals (cons (list var lst) gvals)))
                 (progn (setq lv (gensym)) (setq gvals (cons (list lv lst) gvals))
                        (bind-pattern var)))
             (when (peek-kw "BY")
               (next-form)
               (setq by (next-form)))
             (let ((stepf (by-step lv by))
                   (test (list 'not (list 'consp lv))))
               (if (eq lv var)
                   (list nil (list test) nil
                         (list (list lv stepf)) (list test) nil)
                   (list nil (list test) (dsetq var lv)
                         (list (list lv stepf)) (list test) (dsetq var lv))))))
         (for-eq (var)
           (let* ((e1 (next-form))
                  (e2 (if (peek-kw "THEN") (progn (next-form) (next-form)) e1)))
             (bind-pattern var)
             (if (symbolp var)
                 (list (list (list var e1)) nil nil
                       (list (list var e2)) nil nil)
                 (let ((g (temp nil)))
                   (list (list (list g e1)) nil (dsetq var g)
                         (list (list g e2)) nil (dsetq var g))))))
         (for-across (var)
           (let ((v (gensym)) (n (gensym)) (i (gensym)))
             (setq gvals (cons (list v (next-form)) gvals))
             (setq gvals (cons (list n (list 'length v)) gvals))
             (setq gvals (cons (list i 0) gvals))
             (bind-pattern var)
             (let ((test (list '>= i n)))
               (list nil (list test) (dsetq var (list 'aref v i))
                     (list (list i (list '+ i 1))) (list test)
                     (dsetq var (list 'aref v i))))))
         (for-being (var)
           (unless (and (more) (%loop-kw-in (peek) '("THE" "EACH")))
             (%loop-error "LOOP: expected THE or EACH after BEING, got ~s"
                    (if (more) (peek) nil)))
           (next-form)
           (let ((kind (next-form)) (keys nil) (tbl nil) (other nil))
             (cond ((%loop-kw-in kind '("HASH-KEY" "HASH-KEYS")) (setq keys t))
                   ((%loop-kw-in kind '("HASH-VALUE" "HASH-VALUES")) (setq keys nil))
                   ((%loop-kw-in kind '("SYMBOL" "SYMBOLS" "PRESENT-SYMBOL" "PRESENT-SYMBOLS"
                                        "EXTERNAL-SYMBOL" "EXTERNAL-SYMBOLS"))
                    ;; the symbols of a package (default *package*)
                    (let ((pkg '*package*)
                          (kinds (cond ((%loop-kw-in kind '("SYMBOL" "SYMBOLS")) 3)
                                       ((%loop-kw-in kind '("PRESENT-SYMBOL" "PRESENT-SYMBOLS")) 1)
                                       (t 2))))
                      (when (and (more) (%loop-kw-in (peek) '("OF" "IN")))
                        (next-form)
                        (setq pkg (next-form)))
                      (return-from for-being
                        (iter-list var (list 'mapcar '(function car) (list '%package-symbols pkg kinds))))))
                   (t (%loop-error "LOOP: unsupported iteration BEING THE ~s" kind)))
             (unless (and (more) (%loop-kw-in (peek) '("OF" "IN")))
               (%loop-error "LOOP: expected OF or IN after ~s" kind))
             (next-form)
             (setq tbl (next-form))
             (when (peek-kw "USING")
               (next-form)
               (let ((u (next-form)))
                 (unless (and (consp u) (consp (cdr u))
                              (%loop-kw-in (car u) '("HASH-KEY" "HASH-VALUE")))
                   (%loop-error "LOOP: bad USING clause ~s" u))
                 (setq other (check-var (car (cdr u))))))
             (iter-list (if keys (cons var other) (cons other var))
                        (list '%hash-table-pairs tbl))))
         (for-arith (var)
           (let ((start 0) (start-p nil) (lim nil) (lim-p nil) (incl t)
                 (by 1) (by-p nil) (dir nil))
             (unless var (setq var (gensym)))   ; (for nil from ...) counts unseen
             (unless (and var (symbolp var))
               (%loop-error "LOOP: arithmetic FOR needs a simple variable, not ~s" var))
             (labels ((set-dir (d kw)
                        (when (and dir (not (eq dir d)))
                          (%loop-error "LOOP: conflicting direction ~s for ~s" kw var))
                        (setq dir d)))
               (tagbody
                again
                  (when (and (more)
                             (%loop-kw-in (peek) '("FROM" "UPFROM" "DOWNFROM" "TO"
                                                   "UPTO" "BELOW" "DOWNTO" "ABOVE" "BY")))
                    (let* ((kw (next-form))
                           (k (symbol-name kw))
                           (val (gval (next-form))))
                      (cond ((%loop-kw-in kw '("FROM" "UPFROM" "DOWNFROM"))
                             (when start-p (%loop-error "LOOP: duplicate ~s for ~s" kw var))
                             (setq start val) (setq start-p t)
                             (cond ((string= k "UPFROM") (set-dir 'up kw))
                                   ((string= k "DOWNFROM") (set-dir 'down kw))))
                            ((string= k "BY")
                             (when by-p (%loop-error "LOOP: duplicate BY for ~s" var))
                             (setq by val) (setq by-p t))
                            (t
                             (when lim-p (%loop-error "LOOP: duplicate ~s for ~s" kw var))
                             (setq lim val) (setq lim-p t)
                             (setq incl (%loop-kw-in kw '("TO" "UPTO" "DOWNTO")))
                             (cond ((%loop-kw-in kw '("UPTO" "BELOW")) (set-dir 'up kw))
                                   ((%loop-kw-in kw '("DOWNTO" "ABOVE"))
                                    (set-dir 'down kw))))))
                    (go again))))
             (when (and (eq dir 'down) (not start-p))
               (%loop-error "LOOP: decreasing FOR ~s needs FROM or DOWNFROM" var))
             (setq gvars (cons (list var start) gvars))
             (let* ((down (eq dir 'down))
                    (tests (if lim-p
                               (list (list (if down (if incl '< '<=) (if incl '> '>=))
                                           var lim))
                               nil)))
               (list nil tests nil
                     (list (list var (list (if down '- '+) var by))) tests nil))))
         (parse-for ()
           (let ((recs nil))
             (setq gvals nil) (setq gvars nil)
             (tagbody
              again
                (let ((var (check-var (next-form))))
                  (skip-type)
                  (when (and (more) (consp (peek))) (next-form)) ; destructured type
                  (let ((prep (next-form)))
                    (setq recs (cons (cond ((%loop-kwp prep "IN") (iter-list var (next-form)))
                                ((%loop-kwp prep "ON") (for-on var))
                                ((%loop-kwp prep "=") (for-eq var))
                                ((%loop-kwp prep "ACROSS") (for-across var))
                                ((%loop-kwp prep "BEING") (for-being var))
                                ((%loop-kw-in prep '("FROM" "UPFROM" "DOWNFROM" "TO" "UPTO"
                                                     "BELOW" "DOWNTO" "ABOVE" "BY"))
                                 (setq toks (cons prep toks))
                                 (for-arith var))
                                (t (%loop-error "LOOP: unknown FOR/AS preposition ~s" prep))) recs))))
                (when (peek-kw "AND")
                  (next-form)
                  (go again)))
             (setq groups (cons (append (reverse gvals) (reverse gvars)) groups))
             (setq recs (reverse recs))
             (let ((fp nil) (ft nil) (fo nil) (sp nil) (st nil) (so nil))
               (dolist (r recs)
                 (setq fp (append fp (nth 0 r))) (setq ft (append ft (nth 1 r)))
                 (setq fo (append fo (nth 2 r))) (setq sp (append sp (nth 3 r)))
                 (setq st (append st (nth 4 r))) (setq so (append so (nth 5 r))))
               (setq pre-code (append pre-code (phase-code fp ft fo)))
               (setq step-code (append step-code (phase-code sp st so))))))
         (parse-with ()
           (let ((pairs nil))
             (tagbody
              again
                (let* ((var (or (check-var (next-form)) (gensym)))   ; (with nil = form) runs form
                       (type (skip-type))
                       (init (cond ((peek-kw "=") (next-form) (next-form))
                                   ((consp var) (list 'quote (%loop-type-defaults var type)))
                                   (t (%loop-type-default type)))))
                  (setq pairs (cons (list var init) pairs)))
                (when (peek-kw "AND")
                  (next-form)
                  (go again)))
             (setq pairs (reverse pairs))
             (if (null (cdr pairs))
                 (setq groups (cons (dbind (car (car pairs)) (car (cdr (car pairs)))) groups))
                 (let ((tmps nil) (binds nil))
                   (dolist (p pairs)
                     (let ((g (gensym)))
                       (setq tmps (cons (list g (car (cdr p))) tmps))
                       (setq binds (append binds (dbind (car p) g)))))
                   (setq groups (cons (append (reverse tmps) binds) groups))))))
         (get-acc (into kind type)
           (let* ((class (%loop-acc-class kind))
                  (key (if into into default-key))
                  (e (assoc key accs)))
             (if e
                 (progn
                   (unless (string= (car (cdr e)) class)
                     (%loop-error "LOOP: incompatible accumulation ~a into ~a"
                            kind (if into into "the loop value")))
                   e)
                 (let ((var (if into into (gensym)))
                       (head (gensym)) (tail (gensym)) (flag (gensym)))
                   (setq e (list key class var head tail flag))
                   (setq accs (cons e accs))
                   (if (string= class "LIST")
                       (progn
                         (setq temps (cons (list head (list 'list nil)) temps))
                         (setq temps (cons (list tail head) temps))
                         (when into (setq temps (cons (list var nil) temps))))
                       (progn
                         (setq temps (cons (list var (or (%loop-type-default type) 0)) temps))
                         (when (string= class "MINMAX")
                           (setq temps (cons (list flag nil) temps)))))
                   (unless into
                     (when result-p
                       (%loop-error "LOOP: conflicting default return values at ~s" kind))
                     (setq result-p t)
                     (setq result (if (string= class "LIST") (list 'cdr head) var)))
                   e))))
         (parse-accum (kind)
           (let ((form (form-or-it)) (into nil))
             (when (peek-kw "INTO")
               (next-form)
               (setq into (next-form))
               (unless (and into (symbolp into))
                 (%loop-error "LOOP: bad INTO variable ~s" into))
               (unless (assoc into accs)
                 (when (member into seen-vars)
                   (%loop-error "LOOP: the variable ~s is bound twice" into))
                 (setq seen-vars (cons into seen-vars))))
             (let* ((type (skip-type))
                    (e (get-acc into kind type))
                    (var (nth 2 e)) (head (nth 3 e)) (tail (nth 4 e))
                    (flag (nth 5 e))
                    (sync (if into (list (list 'setq var (list 'cdr head))) nil)))
               (cond ((string= kind "COLLECT")
                      (append (list (list 'rplacd tail (list 'cons form nil))
                                    (list 'setq tail (list 'cdr tail)))
                              sync))
                     ((string= kind "APPEND")
                      (cons (list 'setq tail (list '%loop-append-tail tail form)) sync))
                     ((string= kind "NCONC")
                      (cons (list 'setq tail (list '%loop-nconc-tail tail form)) sync))
                     ((string= kind "SUM")
                      (list (list 'setq var (list '+ var form))))
                     ((string= kind "COUNT")
                      (list (list 'if form (list 'setq var (list '+ var 1)))))
                     (t
                      (let ((v (if (symbolp form) form (temp nil))))
                        (append
                         (if (eq v form) nil (list (list 'setq v form)))
                         (list
                          (list 'if flag
                                (list 'if (list (if (string= kind "MAXIMIZE") '> '<) v var)
                                      (list 'setq var v))
                                (list 'progn (list 'setq var v) (list 'setq flag t)))))))))))
         ;; IT names the test's value only in the first clause after the
         ;; test (ALLOW-IT); elsewhere it is an ordinary symbol, as in SBCL.
         (parse-group (allow-it)
           (let* ((saved cur-it)
                  (fs (progn (unless allow-it (setq cur-it nil)) (parse-selectable))))
             (setq cur-it nil)
             (tagbody
              again
                (when (peek-kw "AND")
                  (next-form)
                  (setq fs (append fs (parse-selectable)))
                  (go again)))
             (setq cur-it saved)
             fs))
         (parse-cond (negate)
           (let ((test (next-form))
                 (old-it cur-it) (old-used it-used)
                 (then nil) (else nil) (itv nil) (used nil))
             (setq cur-it (gensym)) (setq it-used nil)
             (setq then (parse-group t))
             (when (peek-kw "ELSE")
               (next-form)
               (setq else (parse-group nil)))
             (when (peek-kw "END")
               (next-form))
             (setq itv cur-it) (setq used it-used)
             (setq cur-it old-it) (setq it-used old-used)
             (when used
               (setq temps (cons (list itv nil) temps))
               (setq test (list 'setq itv test)))
             (when negate
               (setq test (list 'not test)))
             (if else
                 (list 'if test (cons 'progn then) (cons 'progn else))
                 (list 'if test (cons 'progn then)))))
         (parse-selectable ()
           (let* ((tok (next-form))
                  (kind (%loop-acc-kind tok)))
             (cond (kind (parse-accum kind))
                   ((%loop-kw-in tok '("DO" "DOING")) (compound-forms))
                   ((%loop-kwp tok "RETURN")
                    (list (list 'return-from name (form-or-it))))
                   ((%loop-kw-in tok '("WHEN" "IF")) (list (parse-cond nil)))
                   ((%loop-kwp tok "UNLESS") (list (parse-cond t)))
                   (t (%loop-error "LOOP: ~s is not valid here (expected a clause)" tok)))))
         (body (fs)
           (setq body-code (append body-code fs)))
         (parse-clause ()
           (let ((tok (next-form)))
             (cond
               ((%loop-kwp tok "NAMED")
                (when started
                  (%loop-error "LOOP: NAMED must be the first clause"))
                (setq name (next-form))
                (unless (symbolp name)
                  (%loop-error "LOOP: bad loop name ~s" name)))
               ((%loop-kwp tok "WITH") (parse-with))
               ((%loop-kw-in tok '("FOR" "AS")) (parse-for))
               ((%loop-kwp tok "REPEAT")
                (let ((g (gensym)))
                  (setq groups (cons (list (list g (next-form))) groups))
                  (setq pre-code (append pre-code
                                         (phase-code nil (list (list '<= g 0)) nil)))
                  (setq step-code (append step-code
                                          (phase-code (list (list g (list '- g 1)))
                                                      (list (list '<= g 0)) nil)))))
               ((%loop-kwp tok "INITIALLY")
                (setq prologue (append prologue (compound-forms))))
               ((%loop-kwp tok "FINALLY")
                (setq epilogue (append epilogue (compound-forms))))
               ((%loop-kwp tok "WHILE")
                (body (list (list 'if (list 'not (next-form)) (list 'go '%loop-end)))))
               ((%loop-kwp tok "UNTIL")
                (body (list (list 'if (next-form) (list 'go '%loop-end)))))
               ((%loop-kwp tok "ALWAYS")
                (when (assoc default-key accs)
                  (%loop-error "LOOP: ALWAYS with an accumulation into the loop value"))
                (body (list (list 'if (list 'not (next-form)) (list 'return-from name nil))))
                (unless result-p (setq result t) (setq result-p t)))
               ((%loop-kwp tok "NEVER")
                (when (assoc default-key accs)
                  (%loop-error "LOOP: NEVER with an accumulation into the loop value"))
                (body (list (list 'if (next-form) (list 'return-from name nil))))
                (unless result-p (setq result t) (setq result-p t)))
               ((%loop-kwp tok "THEREIS")
                (when (assoc default-key accs)
                  (%loop-error "LOOP: THEREIS with an accumulation into the loop value"))
                (let ((g (temp nil)))
                  (body (list (list 'if (list 'setq g (next-form))
                                    (list 'return-from name g)))))
                ;; the loop's value is THEREIS's: no accumulation may follow
                (unless result-p (setq result nil) (setq result-p t)))
               ((%loop-selectable-p tok)
                (setq toks (cons tok toks))
                (body (parse-selectable)))
               (t (%loop-error "LOOP: unknown keyword ~s" tok)))
             (setq started t))))
      (tagbody
       again
         (when (more)
           (parse-clause)
           (go again)))
      (let ((code (append (list 'tagbody)
                          prologue pre-code (list next-tag)
                          body-code step-code
                          (list (list 'go next-tag) '%loop-end)
                          epilogue
                          (list (list 'return-from name result)))))
        (dolist (g groups)
          (when g (setq code (list 'let* g code))))
        (when temps
          (setq code (list 'let* (reverse temps) code)))
        (list 'block name code)))))

(defmacro loop (&rest forms)
  (if (%loop-simple-p forms)
      (let ((tag (gensym)))
        ;; %LOOP-END so a stray (loop-finish) still ends this loop.
        (list 'block nil
              (append (list 'tagbody tag) forms (list (list 'go tag) '%loop-end))))
      (%loop-expand forms)))
