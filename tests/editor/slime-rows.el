;;; slime-rows.el --- drive Debian's SLIME against a Swank server, row by row
;;
;; emacs --batch -l slime-rows.el, with SWANK_PORT (the server's port),
;; SWANK_LISP ("jiti" or "sbcl"), SWANK_RESULTS (a file: one line per row,
;; "ROW<TAB>pass|fail|n/a<TAB>detail") and, for jiti, SWANK_STALE_CMD (a
;; shell command that changes the world through another client).  Each row
;; is what a SLIME user does: the commands themselves where batch Emacs can
;; run them, else the RPC those commands send.  Rows never stop the run:
;; a failure is recorded and the next row runs.

(require 'cl-lib)
(let ((dir (car (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/slime-*"))))
  (add-to-list 'load-path dir)
  (add-to-list 'load-path (expand-file-name "contrib" dir)))
(require 'slime)
(slime-setup '(slime-repl slime-autodoc))
(setq slime-net-coding-system 'utf-8-unix)

(defvar swt-port (string-to-number (getenv "SWANK_PORT")))
(defvar swt-lisp (getenv "SWANK_LISP"))
(defvar swt-results (getenv "SWANK_RESULTS"))
(add-hook 'kill-emacs-hook
          (lambda ()
            (when (getenv "SWANK_EVENTS")
              (with-current-buffer (get-buffer-create "*slime-events*")
                (write-region (point-min) (point-max) (getenv "SWANK_EVENTS"))))))
(defvar swt-prompts nil "Questions SLIME asked (a version mismatch would be one).")

(advice-add 'y-or-n-p :around (lambda (_f prompt &rest _) (push prompt swt-prompts) t))
(advice-add 'yes-or-no-p :around (lambda (_f prompt &rest _) (push prompt swt-prompts) t))

(defun swt-record (row status detail)
  (with-temp-buffer
    (insert (format "%s\t%s\t%s\n" row status
                    (replace-regexp-in-string "[\t\n]+" " " (format "%s" detail))))
    (append-to-file (point-min) (point-max) swt-results))
  (message "ROW %-28s %s %s" row status (if (equal status "pass") "" detail)))

(defun swt-wait (pred &optional secs)
  "Let SLIME work until PRED holds, at most SECS (default 10) seconds."
  (let ((end (+ (float-time) (or secs 10))) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) end))
      (accept-process-output nil 0.05))
    v))

(defmacro swt-row (row &rest body)
  "Run BODY: non-nil passes ROW, nil or an error fails it."
  `(let ((r (condition-case e (progn ,@body) (error (list 'error e)))))
     (cond ((and r (not (eq (car-safe r) 'error))) (swt-record ,row "pass" ""))
           (t (swt-record ,row "fail" (if r (cadr r) "not as expected"))))))

(defun swt-eval (form)
  "FORM's value from the Lisp, waited for at most 10 s (never a recursive edit)."
  (let ((done nil) (val nil))
    (slime-eval-async form (lambda (v) (setq val v done t)) "COMMON-LISP-USER")
    (unless (swt-wait (lambda () done) 10) (error "no reply in 10 s to %S" (car form)))
    val))

(defun swt-evaluated (form-text)
  "C-x C-e of FORM-TEXT: the value it printed (the first word after =>)."
  (let ((r (swt-eval `(swank:interactive-eval ,form-text))))
    (and (stringp r) (string-match "^=> \\([^ ]*\\)" r) (match-string 1 r))))

(defun swt-repl (text &optional want secs)
  "Type TEXT in the REPL and press RET; wait for output matching WANT."
  (with-current-buffer (slime-output-buffer)
    (let ((start (point-max)))
      (goto-char (point-max))
      (insert text)
      (slime-repl-return)
      (or (null want)
          (swt-wait (lambda () (with-current-buffer (slime-output-buffer)
                                 (save-excursion (goto-char start)
                                                 (re-search-forward want nil t))))
                    secs)))))

(defun swt-repl-idle ()
  (swt-wait (lambda () (null (slime-rex-continuations))) 10))

(defun swt-sldb ()
  (swt-wait (lambda () (let ((b (sldb-get-default-buffer)))
                         (and b (with-current-buffer b sldb-level) b)))))

(defun swt-no-sldb ()
  (swt-wait (lambda () (null (sldb-get-default-buffer)))))

(defvar swt-lisp-buffer nil)
(defun swt-buffer (text &optional name)
  "A Lisp source buffer in slime-mode holding TEXT (NAME: of its own)."
  (let ((b (get-buffer-create (or name "swt-source.lisp"))))
    (with-current-buffer b
      (erase-buffer)
      (lisp-mode)
      (slime-mode 1)
      (insert text))
    (setq swt-lisp-buffer b)))

(defun swt-compile-defun (text &optional name)
  "C-c C-c on TEXT in a source buffer (NAME): the compilation's result."
  (with-current-buffer (swt-buffer text name)
    (goto-char (point-min))
    (forward-char 1)
    (setq slime-last-compilation-result nil)
    (slime-compile-defun)
    (swt-wait (lambda () slime-last-compilation-result))
    slime-last-compilation-result))

(defun swt-note-messages (result)
  (mapconcat (lambda (n) (plist-get n :message)) (slime-compilation-result.notes result) " | "))

;;; ------------------------------------------------------------------ rows

(swt-row "connect (slime-connect)"
  (slime-connect "127.0.0.1" swt-port)
  (and (swt-wait (lambda () (and (slime-connected-p)
                                           (cl-find-if (lambda (b) (string-prefix-p "*slime-repl" (buffer-name b)))
                                                       (buffer-list)))) 20)
       (swt-wait (lambda () (null (slime-rex-continuations))) 10)
       (or (null swt-prompts) (error "SLIME asked: %S" swt-prompts))))

(unless (slime-connected-p)
  (kill-emacs 3))
(swt-repl-idle)

(swt-row "evaluate in the REPL"
  (swt-repl "(+ 40 2)" "^42$"))

(swt-row "REPL values and *"
  (and (swt-repl "(values 1 2)" "^2$")
       (swt-repl "(+ * 10)" "^11$")))

(swt-row "evaluate (C-x C-e)"
  (equal (swt-evaluated "(* 6 7)") "42"))

(swt-row "compile a definition (C-c C-c)"
  (let ((r (swt-compile-defun "(defun sq (x) \"Square of X.\" (* x x))\n" "swt-sq.lisp")))
    (and r (slime-compilation-result.successp r)
         (progn (swt-compile-defun "(defun use-sq (y) (+ 1 (sq y)))\n" "swt-use.lisp") t)
         (equal (swt-evaluated "(sq 5)") "25"))))

(swt-row "compile error as a note"
  ;; SBCL warns at compile time, then its load enters the debugger: leave it
  (with-current-buffer (swt-buffer "(defparameter *bad* (car 5))\n" "swt-bad.lisp")
    (goto-char (point-min)) (forward-char 1)
    (setq slime-last-compilation-result nil)
    (slime-compile-defun)
    (swt-wait (lambda () (or slime-last-compilation-result (sldb-get-default-buffer))))
    (when (sldb-get-default-buffer)
      (with-current-buffer (sldb-get-default-buffer) (sldb-quit))
      (swt-no-sldb)
      (swt-wait (lambda () slime-last-compilation-result) 5))
    (swt-repl-idle)
    (and slime-last-compilation-result (slime-compilation-result.notes slime-last-compilation-result) t)))

(swt-row "indentation of a new macro"
  (let ((r (swt-compile-defun "(defmacro with-swt ((v x) &body body) `(let ((,v ,x)) ,@body))\n" "swt-macro.lisp")))
    (and r (slime-compilation-result.successp r)
         (swt-wait (lambda () (equal (get 'with-swt 'common-lisp-indent-function) 1)) 5))))

(swt-row "load a file (C-c C-k)"
  (let ((f (make-temp-file "swt" nil ".lisp" "(defun from-file (n) (* n 100))\n")))
    (find-file f)
    (lisp-mode) (slime-mode 1)
    (setq slime-last-compilation-result nil)
    (slime-compile-and-load-file)
    (swt-wait (lambda () slime-last-compilation-result))
    (swt-wait (lambda () (equal (ignore-errors (swt-evaluated "(from-file 3)")) "300")) 5)))

(swt-row "jump to a definition (M-.)"
  (with-current-buffer (swt-buffer "(use-sq 3)" "swt-mdot.lisp")
    (slime-edit-definition "sq")
    (swt-wait (lambda () (save-excursion (let ((case-fold-search t))
                                           (goto-char (point-min)) (re-search-forward "(defun sq" nil t)))) 5)))

(swt-row "jump to a definition in its file (M-.)"
  ;; loaded from a file: M-. opens that file at the definition's line, also
  ;; after a line was added above it (found by its text near its place)
  (let ((f (make-temp-file "swt" nil ".lisp"
                           ";; first line\n;; second\n(defun in-file-fn (n)\n  ;; written by hand\n  (* n 7))\n")))
    (find-file f)
    (lisp-mode) (slime-mode 1)
    (setq slime-last-compilation-result nil)
    (slime-compile-and-load-file)
    (swt-wait (lambda () slime-last-compilation-result))
    (goto-char (point-min))
    (insert ";; a line added since\n")
    (save-buffer)
    (with-current-buffer (swt-buffer "(in-file-fn 3)" "swt-mdot2.lisp")
      (slime-edit-definition "in-file-fn"))
    (swt-wait (lambda () (let ((b (window-buffer (selected-window))))
                           (with-current-buffer b
                             (and (equal (buffer-file-name) f)
                                  (looking-at "(defun in-file-fn"))))) 5)))

(swt-row "complete a symbol"
  (let ((r (swt-eval '(swank:simple-completions "mapc" "COMMON-LISP-USER"))))
    (and (member "mapcar" (car r)) (member "mapcan" (car r)) (equal (cadr r) "mapc"))))

(swt-row "fuzzy completion"
  (let ((r (swt-eval '(swank:fuzzy-completions "use-s" "COMMON-LISP-USER"))))
    (cl-some (lambda (c) (string-match-p "use-sq" (car c))) (car r))))

(swt-row "arglist (autodoc)"
  (let ((a (swt-eval '(swank:operator-arglist "sq" "COMMON-LISP-USER"))))
    (and (stringp a) (string-match-p "(sq x)" (downcase a)))))

(swt-row "autodoc in the minibuffer"
  (let ((a (swt-eval '(swank:autodoc '("sq" "" swank::%cursor-marker%) :print-right-margin 80))))
    (and (stringp (car a)) (string-match-p "(sq .*x" (downcase (car a))))))

(swt-row "describe (C-c C-d d)"
  (let ((d (swt-eval '(swank:describe-symbol "sq"))))
    (and (stringp d) (string-match-p "SQ" d) (string-match-p "Square of X" d))))

(swt-row "documentation"
  (let ((d (swt-eval '(swank:documentation-symbol "sq"))))
    (and (stringp d) (string-match-p "Square of X" d))))

(swt-row "apropos"
  (let ((r (swt-eval '(swank:apropos-list-for-emacs "MAPCA" nil nil nil))))
    (cl-some (lambda (p) (string-match-p "MAPCAR" (plist-get p :designator))) r)))

(swt-row "who-calls"
  (let ((r (swt-eval '(swank:xref :calls "sq"))))
    (and (listp r) (cl-some (lambda (x) (string-match-p "USE-SQ" (upcase (car x)))) r))))

(swt-row "macroexpand (C-c C-m)"
  (let ((r (swt-eval '(swank:swank-macroexpand-1 "(when a b)"))))
    (and (stringp r) (string-match-p "IF" r))))

(defun swt-part-id (content text)
  "The id of the part shown as TEXT in an inspector's CONTENT."
  (cl-loop for item in (car content)
           when (and (eq (car-safe item) :value) (equal (cadr item) text)) return (cl-caddr item)))

(defun swt-shows (view text)
  "Whether an inspector VIEW shows TEXT (in its title or its content)."
  (or (string-match-p (regexp-quote text) (plist-get view :title))
      (cl-some (lambda (item) (if (stringp item) (string-match-p (regexp-quote text) item)
                                (and (consp item) (stringp (cadr item))
                                     (string-match-p (regexp-quote text) (cadr item)))))
               (car (plist-get view :content)))))

(swt-row "inspect a value (C-c I)"
  (slime-inspect "(list 10 20 30)")
  (and (swt-wait (lambda () (let ((b (get-buffer (slime-buffer-name :inspector))))
                              (and b (with-current-buffer b
                                       (string-match-p "1: 20" (buffer-string)))))))
       (let* ((view (swt-eval '(swank:init-inspector "(list 10 20 30)")))
              (id (swt-part-id (plist-get view :content) "30")))
         (and id (swt-shows (swt-eval `(swank:inspect-nth-part ,id)) "30")))
       (swt-shows (swt-eval '(swank:inspector-pop)) "10")))

(swt-row "error in sldb, restart chosen"
  (and (swt-repl "(restart-case (error \"boom\") (use-zero () :report \"Use zero.\" 0))")
       (let ((b (swt-sldb)))
         (and b (with-current-buffer b
                  (and (string-match-p "boom" (buffer-string))
                       (string-match-p "Use zero" (buffer-string))
                       (progn (sldb-invoke-restart 0) t)))))
       (swt-no-sldb)
       (swt-repl-idle)
       (with-current-buffer (slime-output-buffer)
         (save-excursion (goto-char (point-max)) (re-search-backward "^0$" nil t)))))

(swt-row "locals and evaluate in a frame"
  (swt-compile-defun "(defun div (a b) (declare (optimize (debug 3))) (/ a b))\n" "swt-div.lisp")
  (and (swt-repl "(div 10 0)")
       (swt-sldb)
       ;; as sldb's own commands: from its buffer, on its thread
       (with-current-buffer (sldb-get-default-buffer)
         (let* ((frames (swt-eval '(swank:backtrace 0 30)))
                (fr (cl-find-if (lambda (f) (string-match-p "(DIV 10 0)" (upcase (cadr f)))) frames))
                (i (car fr)))
           (and fr
                (string-match-p "^=> 15\\b" (swt-eval `(swank:eval-string-in-frame "(+ a 5)" ,i "COMMON-LISP-USER")))
                (let ((locals (car (swt-eval `(swank:frame-locals-and-catch-tags ,i)))))
                  (cl-some (lambda (l) (equal (plist-get l :value) "10")) locals)))))
       (with-current-buffer (sldb-get-default-buffer) (sldb-quit) t)
       (swt-no-sldb)
       (swt-repl-idle)))

(swt-row "interrupt a loop (C-c C-c)"
  (swt-repl "(loop)")
  (sleep-for 0.5)
  (with-current-buffer (slime-output-buffer) (slime-interrupt))
  (and (swt-sldb)
       (with-current-buffer (sldb-get-default-buffer)
         (string-match-p "[Ii]nterrupt" (buffer-string)))
       (with-current-buffer (sldb-get-default-buffer) (sldb-quit) t)
       (swt-no-sldb)
       (swt-repl-idle)
       (swt-repl "(+ 1 1)" "^2$")))

(if (member (getenv "SWANK_STALE_CMD") '(nil ""))
    (swt-record "stale compile as a note" "n/a" "no generations in this Lisp")
  (swt-row "stale compile as a note"
    (shell-command (getenv "SWANK_STALE_CMD"))
    (let ((r (swt-compile-defun "(defun sq (x) (* x x 1))\n" "swt-stale.lisp")))
      (and r (not (slime-compilation-result.successp r))
           (string-match-p "stale" (swt-note-messages r))
           (let ((again (swt-compile-defun "(defun sq (x) (* x x 1))\n" "swt-stale.lisp")))
             (and again (slime-compilation-result.successp again)))))))

(if (member (getenv "SWANK_INVARIANT_CMD") '(nil ""))
    (progn (swt-record "gate refusal as a note" "n/a" "no gate in this Lisp")
           (swt-record "invariant refusal as a note" "n/a" "no invariants in this Lisp"))
  (swt-row "gate refusal as a note"
    (let ((r (swt-compile-defun "(defparameter *r* #.(+ 1 2))\n" "swt-gate.lisp")))
      (and r (not (slime-compilation-result.successp r))
           (string-match-p "rejected-by-gate" (swt-note-messages r)))))
  (swt-row "invariant refusal as a note"
    (shell-command (getenv "SWANK_INVARIANT_CMD"))
    (swt-compile-defun "(world-put :n -1)\n" "swt-inv.lisp")  ; stale: the invariant moved the world
    (let ((r (swt-compile-defun "(world-put :n -1)\n" "swt-inv.lisp")))
      (and r (not (slime-compilation-result.successp r))
           (string-match-p "unsafe" (swt-note-messages r))
           ;; the note sits at the form's place in its buffer
           (let ((loc (plist-get (car (slime-compilation-result.notes r)) :location)))
             (equal (cadr loc) '(:buffer "swt-inv.lisp")))))))

(swt-row "disconnect"
  (slime-disconnect)
  (swt-wait (lambda () (not (slime-connected-p))) 5)
  t)

(kill-emacs 0)
