#!/usr/bin/env bash
# Definitions beside a symbol's cells, end to end through a real kernel:
# deftype, define-symbol-macro, defsetf (short and long), define-setf-
# expander, define-compiler-macro, define-modify-macro, documentation and
# property lists, each made by a call of its own and used by a function;
# the kernel stopped and started again (its worker imports CURRENT): the
# functions still work, and so do redefinitions and removals after another
# restart.  A call that fails leaves no trace; the language's own symbols
# cannot be given any of them; show, diff, inspect and recover-session name
# the new kinds.  A define-method-combination survives a restart too.
#   bash tests/definitions.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-defs.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
e() { "$JITI" eval --store "$S" "$@"; }
fingerprint() { "$JITI" observe --json --store "$S" | grep -v '"generation"'; }

"$JITI" init --store "$S" >/dev/null
start_kernel "$S"; ok kernel-starts $?

# --- each definition in a call of its own, then a function using it
t deftype 0 '^SMALL$' -- e "(deftype small () '(integer 0 9))"
t deftype-use 0 '^SMALL-P$' -- e "(defun small-p (x) (typep x 'small))"
t symbol-macro 0 '^HEAD$' -- e "(progn (defvar *pair* (list 1 2)) (define-symbol-macro head (car *pair*)))"
t symbol-macro-use 0 '^HEAD-OF$' -- e "(defun head-of (l) (let ((*pair* l)) (incf head) *pair*))"
t defsetf-short 0 '^KAR$' -- e "(progn (defun kar (c) (car c)) (defun store-kar (c v) (setf (car c) (* 10 v))) (defsetf kar store-kar))"
t defsetf-short-use 0 '^SET-KAR$' -- e "(defun set-kar (c) (setf (kar c) 4) c)"
t defsetf-long 0 '^KDR$' -- e '(defsetf kdr (c) (v) `(setf (cdr ,c) (list ,v)))'
t defsetf-long-use 0 '^SET-KDR$' -- e "(defun set-kdr (c) (setf (kdr c) 5) c)"
t setf-expander 0 '^KAR2$' -- e '(define-setf-expander kar2 (c) (let ((g (gensym)) (s (gensym))) (values (list g) (list c) (list s) `(setf (car ,g) (+ 1000 ,s)) `(car ,g))))'
t setf-expander-use 0 '^SET-KAR2$' -- e "(defun set-kar2 (c) (setf (kar2 c) 3) c)"
t compiler-macro 0 '^SQ$' -- e "(progn (defun sq (x) (* x x)) (define-compiler-macro sq (&whole w x) (if (numberp x) (* x x) w)))"
t modify-macro 0 '^APPENDF$' -- e '(define-modify-macro appendf (&rest lists) append "Append to a place.")'
t modify-macro-use 0 '^APPEND-TO$' -- e "(defun append-to (l) (appendf l (list 2)) l)"
t documentation 0 '"Small or not."' -- e '(progn (defvar *rate* 5 "The rate.") (setf (documentation (quote small-p) (quote function)) "Small or not."))'
t plist 0 '^2$' -- e "(setf (get 'plus 'precedence) 1 (get 'times 'precedence) 2)"
t plist-use 0 '^PREC$' -- e "(defun prec (op) (get op 'precedence))"
t show-kind 0 "added plist TIMES" -- "$JITI" show --store "$S" HEAD~1
USES="(list (small-p 3) (small-p 30) (head-of (list 1 2)) (set-kar (list 1 2)) (set-kdr (list 1 2)) (set-kar2 (list 1 2)) (funcall (compiler-macro-function 'sq) '(sq 3) nil) (append-to (list 1)) (documentation 'appendf 'function) (documentation '*rate* 'variable) (documentation 'small-p 'function) (prec 'plus) (prec 'times))"
WANT='^\(T NIL \(2 2\) \(40 2\) \(1 5\) \(1003 2\) 9 \(1 2\) "Append to a place." "The rate." "Small or not." 1 2\)$'
t uses 0 "$WANT" -- e "$USES"
# a deftype whose function uses a symbol macro: the store imports symbol
# macros first
t type-of-symbol-macro 0 '^T$' -- e '(progn (define-symbol-macro lim 9) (deftype upto-lim () `(integer 0 ,lim)) (typep 9 (quote upto-lim)))'

# --- a change in place publishes the variable it changed, not the
# property lists exported with it (they change in place too)
t change-in-place 0 '^7$' -- e "(car (rplaca *pair* 7))"
t change-in-place-only-var 0 'changes: +\+0 ~1 -0.*changed variable \*PAIR\*' -- "$JITI" show --store "$S" HEAD

# --- a call that fails leaves nothing behind
before=$(fingerprint)
t failing-call 1 'boom' -- e "(progn (deftype gone () 'integer) (define-symbol-macro gone-sm 1) (defsetf gone-acc gone-w) (define-compiler-macro sq (x) x) (define-modify-macro gone-m () 1+) (setf (get 'plus 'precedence) 99 (documentation 'sq 'function) \"gone\") (error \"boom\"))"
ok failing-call-no-trace "$([[ $(fingerprint) == "$before" ]]; echo $?)"
t failing-call-undone 0 '^\(NIL 1 NIL\)$' -- e "(list (ignore-errors (typep 1 'gone)) (prec 'plus) (documentation 'sq 'function))"

# --- the language's own symbols are refused, and nothing of them leaks
t builtin-plist 1 'cannot change the property list of CAR' -- e "(setf (get 'car 'colour) 1)"
t builtin-doc 1 'cannot change the documentation of CAR' -- e "(setf (documentation 'car 'function) \"x\")"
t builtin-compiler-macro 1 'cannot define CAR as a compiler macro' -- e "(define-compiler-macro car (x) x)"
t builtin-deftype 1 'cannot define CAR as a type' -- e "(deftype car () 'integer)"
t builtin-defsetf 1 'cannot define CAR as a setf expander' -- e "(defsetf car kar)"
t builtin-untouched 0 '^\(NIL NIL\)$' -- e "(list (get 'car 'colour) (compiler-macro-function 'car))"

# --- the kinds as the commands show them
t inspect-type 0 "deftype small" -- "$JITI" inspect --store "$S" --kind type SMALL
t inspect-plist 0 "SYMBOL-PLIST" -- "$JITI" inspect --store "$S" --kind plist PLUS

# --- a pprint dispatch table kept in a variable: its functions by name; a
# function object cannot be stored, and is refused naming the fix; the
# current table lasts for one transaction
t pprint-table 0 '^ANGLE-TABLE$' -- e "(progn (defun angle-print (s x) (let ((*print-pretty* nil)) (format s \"<~A>\" x))) (defvar *angle-table* (copy-pprint-dispatch nil)) (set-pprint-dispatch 'integer 'angle-print 0 *angle-table*) 'angle-table)"
t pprint-table-use 0 '^"\(<1> <2>\)"$' -- e "(write-to-string (list 1 2) :pretty t :pprint-dispatch *angle-table*)"
t pprint-table-closure 1 'a pprint dispatch table holding a function object \(name the function' -- e "(defvar *bad-table* (let ((tb (copy-pprint-dispatch nil))) (set-pprint-dispatch 'integer (lambda (s x) (print x s)) 0 tb) tb))"
t pprint-current-table 0 '^"<5>"$' -- e "(progn (set-pprint-dispatch 'integer 'angle-print) (write-to-string 5 :pretty t))"
t pprint-current-table-reset 0 '^"5"$' -- e "(write-to-string 5 :pretty t)"

# --- the world's syntax: *readtable* and a readtable in a variable are
# kept, their functions by name; a failing call takes its change of syntax
# back; a function object is refused naming the fix
t readtable-world 0 '^\(:BANG X\)' -- e "(progn (defun bang-reader (s c) (declare (ignore c)) (list :bang (read s t nil t))) (setq *readtable* (copy-readtable nil)) (set-macro-character #\\! 'bang-reader) (read-from-string \"!x\"))"
t readtable-var 0 '^\*DOWN\*$' -- e "(progn (defun sharp-at (s c n) (declare (ignore c n)) (list :at (read s t nil t))) (defvar *down* (copy-readtable nil)) (setf (readtable-case *down*) :invert) (set-dispatch-macro-character #\\# #\\@ 'sharp-at *down*) (world-put :rt (copy-readtable *down*)) '*down*)"
t readtable-kept 0 '^\(:BANG Y\)' -- e '(read-from-string "!y")'
t readtable-failing-call 1 'boom' -- e "(progn (setf (readtable-case *readtable*) :downcase) (set-macro-character #\\! nil) (set-macro-character #\\! 'bang-reader nil *down*) (error \"boom\"))"
READS='(list (readtable-case *readtable*) (read-from-string "!z") (let ((*readtable* *down*)) (read-from-string "(#@Ab !c)")) (let ((*readtable* (world-get :rt))) (read-from-string "#@q")))'
READS_WANT='^\(:UPCASE \(:BANG Z\) \(\(:AT \|Ab\|\) !C\) \(:AT Q\)\)$'
t readtable-failing-call-undone 0 "$READS_WANT" -- e "$READS"
t readtable-closure 1 'variable \*READTABLE\* holds an unexportable value: a readtable holding a function object \(name the function' -- e "(set-macro-character #\\? (lambda (s c) (declare (ignore s c)) 1))"

# --- a class whose initforms close over a lexical environment works in its
# call, but cannot be stored: refused, naming the fix, and nothing kept
t class-lexical 1 'class LEXICAL-CLASS holds an unexportable value: a class whose initforms close over a lexical environment \(define it at top level' -- e "(let ((x 7)) (defclass lexical-class () ((s :initform x))) (slot-value (make-instance 'lexical-class) 's))"
t class-lexical-none 0 '^NIL$' -- e "(find-class 'lexical-class nil)"
t method-eql-form 1 'holds an unexportable value: a method whose \(EQL x\) specializer is the value of a form \(an import evaluates nothing' -- e "(progn (defvar *key-list* (list 'a)) (defmethod pick ((x (eql *key-list*))) :picked) (pick *key-list*))"
t method-eql-form-none 0 '^NIL$' -- e "(fboundp 'pick)"
t method-eql-literal 0 '^:ONE$' -- e "(progn (defmethod pick-literal ((x (eql 1))) :one) (pick-literal 1))"
t class-name-method 0 '^SILLY$' -- e "(progn (defclass silly-named () ()) (defmethod class-name ((x silly-named)) 'silly) (class-name (make-instance 'silly-named)))"
t class-top 0 '^\(1 2\)$' -- e "(progn (defclass top-class () ((s :initform (list 1 2)))) (slot-value (make-instance 'top-class) 's))"

# --- stop, start: the worker imports CURRENT, and every use still works
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S"; ok restart $?
t uses-after-restart 0 "$WANT" -- e "$USES"
t type-of-symbol-macro-after-restart 0 '^\(T NIL\)$' -- e "(list (typep 9 'upto-lim) (typep 10 'upto-lim))"
t pprint-table-after-restart 0 '^"\(<1> <2>\)"$' -- e "(write-to-string (list 1 2) :pretty t :pprint-dispatch *angle-table*)"
t readtable-after-restart 0 "$READS_WANT" -- e "$READS"
t method-eql-literal-after-restart 0 '^:ONE$' -- e "(pick-literal 1)"
t class-name-method-after-restart 0 '^SILLY$' -- e "(class-name (make-instance 'silly-named))"
t class-top-after-restart 0 '^\(1 2\)$' -- e "(slot-value (make-instance 'top-class) 's)"

# --- redefinitions and removals, then another restart
t redefine-type 0 '^SMALL$' -- e "(deftype small () '(integer 0 99))"
t redefine-symbol-macro 0 '^HEAD$' -- e "(define-symbol-macro head (cadr *pair*))"
t redefine-setf 0 '^KAR$' -- e '(define-setf-expander kar (c) (let ((g (gensym)) (s (gensym))) (values (list g) (list c) (list s) `(setf (car ,g) (- ,s)) `(car ,g))))'
t remove-compiler-macro 0 '^NIL$' -- e "(setf (compiler-macro-function 'sq) nil)"
t replace-modify-macro 0 '^APPENDF$' -- e '(defmacro appendf (place x) `(setf ,place (append ,place ,x)))'
t remove-property 0 '^T$' -- e "(remprop 'plus 'precedence)"
AFTER="(list (typep 30 'small) (let ((*pair* (list 1 2))) (incf head) *pair*) (let ((c (list 1 2))) (setf (kar c) 4) c) (compiler-macro-function 'sq) (macroexpand-1 '(appendf x 1)) (prec 'plus) (prec 'times))"
WANT2='^\(T \(1 3\) \(-4 2\) NIL \(SETF X \(APPEND X 1\)\) NIL 2\)$'
t after 0 "$WANT2" -- e "$AFTER"
t diff-kinds 0 "removed compiler-macro SQ" -- "$JITI" diff --store "$S" HEAD~6 HEAD
"$JITI" stop --store "$S" >/dev/null
t recover-counts 0 "types 2, symbol macros 2, setf expanders 3, documentation strings 2, property lists 1" -- "$JITI" recover-session --store "$S"
start_kernel "$S"; ok restart-again $?
t after-restart 0 "$WANT2" -- e "$AFTER"

# --- a method combination is an entry of its own, imported before the
# generic functions that use it
t method-combination 0 '^TIMES$' -- e "(define-method-combination times :operator *)"
t method-combination-use 0 '^OK$' -- e "(progn (defgeneric prod (x) (:method-combination times) (:method times ((x integer)) 2) (:method times ((x real)) 5)) 'ok)"
t method-combination-builtin 1 "the language's" -- e "(define-method-combination + :operator *)"
t inspect-method-combination 0 "define-method-combination times" -- "$JITI" inspect --store "$S" --kind method-combination TIMES
"$JITI" stop --store "$S" >/dev/null
t recover-method-combination 0 "method combinations 1" -- "$JITI" recover-session --store "$S"
start_kernel "$S"; ok restart-combination $?
t method-combination-after-restart 0 '^\(10 5\)$' -- e "(list (prod 1) (prod 1.0))"
"$JITI" stop --store "$S" >/dev/null

finish
