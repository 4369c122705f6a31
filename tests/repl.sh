#!/usr/bin/env bash
# `jiti repl` end to end on a temporary store: a piped session (a multi-line
# defun, calls, an error, :observe, :status, an :act that pauses answered by
# :resume, another aborted) checked on its output and on the world
# afterwards; forms the line reader must keep whole (strings, comments,
# character literals, quotes); the end of input inside a form; a kernel
# restarting mid-session; a session on a terminal (script(1) gives it a pty,
# so libedit really reads the lines) and its history file: mode 0600, an
# existing file's mode tightened, at most 1000 entries kept.
#   bash tests/repl.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-repl.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
unset JITI_REPL_HISTORY JITI_STORE

repl() {  # repl INPUT: pipe INPUT into a session on $S
  printf '%s' "$1" | timeout 60 "$JITI" repl --store "$S"
}
typed() {  # typed KEYS...: a session on a pseudo-terminal (script(1)), each KEYS
           # typed once one more prompt shows (typed ahead, they would reach
           # the terminal while the repl waits for a reply, in cooked mode,
           # where a Ctrl-D is lost); ~KEYS: typed 0.5 s after the previous
           # ones, without waiting.  Prints the session; its exit status.
           # `exec`: script runs $SHELL -c; a dash there would stay the
           # parent and die of the Ctrl-C meant for the repl.
  local outf=$tmp/tty.out n=0 k
  rm -f "$outf.done"; : >"$outf"
  {
    for k in "$@"; do
      if [[ $k == '~'* ]]; then sleep 0.5; printf '%s' "${k:1}"; continue; fi
      n=$((n+1))
      for _ in $(seq 300); do
        (( $(grep -aoE 'jiti [^>]*> |\.\.\.> ' "$outf" | wc -l) >= n )) && break
        sleep 0.1
      done
      printf '%s' "$k"
    done
    # keep the terminal open until the repl has gone: script would type an EOF
    for _ in $(seq 300); do [[ -e $outf.done ]] && break; sleep 0.1; done
  } | { timeout 60 script -qec "exec '$JITI' repl --store '$S'" /dev/null >"$outf" 2>&1; echo $? >"$outf.done"; }
  cat "$outf"
  return "$(cat "$outf.done")"
}
value() { "$JITI" eval --store "$S" "$1" 2>&1; }

# --- usage, no kernel
t help 0 "usage: jiti repl" -- "$JITI" repl --help
t listed 0 "repl +an interactive session" -- "$JITI" --help
t bad-option 2 "unexpected argument '--bogus'" -- "$JITI" repl --store "$S" --bogus
t store-needs-dir 2 "" -- "$JITI" repl --store
t no-kernel 1 "^jiti repl: no kernel is running for $S; start one with: jiti kernel --store $S$" -- \
  repl $'(+ 1 2)\n'

start_kernel "$S" --fuel 0; ok kernel-starts $?  # no fuel limit: the call Ctrl-C interrupts must outlast 0.5 s
value '(world-put :keep 42)' >/dev/null

# --- one piped session: calls, the debugger (an error pauses the call; a
# form is a repair there; an error in one opens level 2; a number chooses a
# restart), an act answered by :resume
session=$(cat <<'EOF'
(defun f (x)
  ;; a comment with a ( in it
  (list #\( "a)b;" (/ 10 x)))
(f 2)
(progn (print 5) :printed)
(/ 1 0)
(+ 40 2)
(car 6)
:bt
:abort
:abort
:observe
:status
:act (restart-case (f 0)
       (use-value (v) v))
(f 1)
:resume p1-0 7
(world-put :total (twice 21))
(defun twice (x) (* 2 x))
:continue
(list (values) (world-get :total))
(floor 7 2) (values) (+ 1 2)
(progn (world-put :keep 0) (restart-case (car 5) (use-value (v) (world-put :keep v) v)))
9 'x
1
0 100
:act (progn (world-put :keep 0) (car 5))
:abort
:frobnicate
:quit
(world-put :after-quit 1)
EOF
)
out=$(repl "$session"$'\n' 2>&1); st=$?
ok session-exit-0 "$([[ $st -eq 0 ]]; echo $?)"
has() {  # has NAME REGEX: the session's output matches
  if [[ $out =~ $2 ]]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $1: no match for $2 in: ${out:0:3000}"; fi
}
has defun $'^F\n; revision [0-9]+: function F\n'
has call-value $'\n\\(#\\\\\\( "a\\)b;" 5\\)\n'
has call-output $'\n\n5 \n:PRINTED\n'
has call-pauses $'\ndebugger entered at level 1 \\(generation [0-9]+\\): DIVISION-BY-ZERO: [^\n]*\n(Operation was [^\n]*\n)?backtrace \\(:bt shows it all\\):\n  0: \\(/ 1 0\\)\n'
has form-is-repair $'\nrepair value: 42\n'
has repair-error-level-2 $'\ndebugger entered at level 2 \\(generation [0-9]+\\): TYPE-ERROR: The value 6 is not of type LIST\n\\(an error inside a repair; :abort returns to level 1\\)\n'
has bt $'\nno frames: the error came from no call of the program\'s own\n'
has abort-one-level $'\nback at level 1 \\(generation [0-9]+\\): DIVISION-BY-ZERO'
has aborted $'\naborted: [^\n]*\n'
has observe $'\ngeneration [0-9]+, revision [0-9]+, idle, package COMMON-LISP-USER\nfunction  F\n'
has observe-data $'\ndata \\(1 rows\\):\n  :KEEP = '
has status $'\nstate: +idle\n'
has act-pauses $'\nrestarts:\n  0: \\[USE-VALUE\\] USE-VALUE  \\(p1-0, takes \\(V\\)\\)\n'
has paused-form-is-repair $'\nrepair value: \\(#\\\\\\( "a\\)b;" 10\\)\n'
has resumed $'\n7\n'
has undefined-function-restarts $'\n  0: \\[CONTINUE\\] Retry calling TWICE.  \\(p[0-9]+-0\\)\n  1: \\[USE-VALUE\\] Call specified function.  \\(p[0-9]+-1, takes \\(FUNCTION\\)\\)\n'
has continued $'\n42\n; revision [0-9]+: (data :TOTAL, function TWICE|function TWICE, data :TOTAL)\n'
has no-values-in-a-list $'\n\\(NIL 42\\)\n'
has forms-on-a-line $'\n3\n1\n; No values\n3\n'
has restart-number-out-of-range $'\nno restart 9: the menu has 1 \\(0 to 0\\)\n'
has restart-number-with-args $'\n100\n; revision [0-9]+: data :KEEP\n'
has pause-again $'\ndebugger entered at level 1 \\(generation [0-9]+\\): TYPE-ERROR'
has unknown-command 'unknown command :frobnicate \(:help'
ok stops-at-quit "$([[ ! $out =~ AFTER-QUIT|:after-quit ]]; echo $?)"
# the world afterwards
t world-function 0 '^\(#\\\( "a\)b;" 1\)$' -- value '(f 10)'
t world-abort-restored 0 "^100$" -- value '(values (world-get :keep))'
t world-after-quit 0 "^NIL$" -- value '(values (world-get :after-quit))'
t world-status-idle 0 "state: +idle" -- "$JITI" status --store "$S"
t world-observe 0 "function  F" -- "$JITI" observe --store "$S"

# --- the line reader keeps forms whole
t r-quote-on-its-own-line 0 '^\(A B\)$' -- repl $'\'\n(a b)\n'
t r-character-literals 0 '^\(#\\\) #\\\( #\\;\)$' -- repl $'(list #\\)\n#\\( #\\;)\n'
t r-string-over-lines 0 $'^"a\n\\(b"$' -- repl $'"a\n(b"\n'
t r-block-comment 0 '^3$' -- repl $'(+ 1 #| ( #| ) |# ( |#\n 2)\n'
t r-symbol-bars 0 '^\|a\(\|$' -- repl $'(quote |a(|)\n'
t r-blank-and-comments-only 0 '^$' -- repl $'\n   \n; nothing (\n'
t r-history-variables 0 $'^3\n30\n\\(30 3\\)\n3\n1\n\\(3 1\\)\n/\n\\(\\(LIST - \\(LENGTH \\+\\+\\+\\)\\) 3\\)$' -- \
  repl $'(+ 1 2)\n(* 10 *)\n(list * **)\n(floor 7 2)\n/\n+\n(list - (length +++))\n'
# the debugger's frames: locals, a repair in a frame, return from one, restart one
t r-frames 0 $'backtrace \\(:bt shows it all\\):\n  0: \\(/ 10 0\\)\n  1: \\(RATIO 10\\)\n      N = 10\n      D = 0\n.*1: \\(RATIO 10\\)\n  N = 10\n  D = 0\nrepair value: 5\n1: \\(RATIO 10\\)\n  N = 10\n  D = 5\n7\n; revision [0-9]+: data :RFR' -- \
  repl $'(defun ratio (n) (let ((d 0)) (/ n d)))\n(world-put :rfr (ratio 10))\n:locals 1\n:frame 1 (setq d 5)\n:locals 1\n:return 0 7\n'
t r-restart-frame 0 $'\n5\n; revision [0-9]+: (data :RRF, function RATIO|function RATIO, data :RRF)$' -- \
  repl $'(world-put :rrf (ratio 10))\n(defun ratio (n) (let ((d 2)) (/ n d)))\n:restart-frame 1\n'
t r-frame-usage 0 $'usage: :frame N FORM' -- repl $':frame x\n'
t r-frame-not-paused 0 $'nothing is paused: frames exist only in the debugger' -- repl $':locals 0\n'
t r-two-forms-in-turn 0 $'^3\n7$' -- repl $'(+ 1 2) (+ 3 4)\n'
t r-forms-and-atoms 0 $'^1\n"a b"\n\\(Q\\)\n#\\\\Tab\n2$' -- repl $'1 "a b" \'(q) #\\Tab 2\n'
t r-on-error-fail 0 $'\nerror: TYPE-ERROR: [^\n]*\nbacktrace \\(innermost first\\):\n  0: \\(FIRST-OF 5\\)' -- \
  bash -c "printf '(defun first-of (x) (car x))\\n(first-of 5)\\n' | timeout 60 '$JITI' repl --store '$S' --on-error fail"
t r-on-error-bad 2 "--on-error needs pause" -- "$JITI" repl --store "$S" --on-error retry
t r-colon-inside-form 0 '^:K$' -- repl $'(values\n:k)\n'
t r-help 0 ":resume ID \[ARGS\].*:inspect \[KIND\] NAME.*:quit.*Entry kinds: function, macro, variable, structure, data, invariant, class, generic, method, foreign, package, type, symbol-macro, setf-expander, compiler-macro, documentation, plist, method-combination or file\." -- repl $':help\n'
t r-act-usage 0 "usage: :act FORM" -- repl $':act\n'
t r-resume-not-paused 0 "^not-paused: " -- repl $':resume p1-0\n'
t r-eof-inside-form 1 "<input>:3:1: end of file inside a form opened at 1:1" -- repl $'(world-put :half\n  1\n'
t r-eof-form-not-sent 0 "^NIL$" -- value '(values (world-get :half))'
t r-eof-exit-0 0 '^3$' -- repl $'(+ 1 2)\n'

# --- inspect and history
out=$(repl $':inspect function f\n:history 3\n' 2>&1)
has inspect $'^function F\nhash [0-9a-f]{64}\n\\(defun f \(x\)\n  ;; a comment with a \\( in it'
has history $'\n[0-9]+ +[^\n]* application +g[0-9]+ '
t inspect-not-found 0 "^not-found: " -- repl $':inspect function no-such-function\n'
t inspect-name-alone 0 $'^function F\nhash [0-9a-f]{64}\n\\(defun f ' -- repl $':inspect f\n'
t inspect-bad-kind 0 "^usage: :inspect \[KIND\] NAME  \(KIND: function, .*, class, generic, method, foreign, package, .* or file\)" -- repl $':inspect funktion f\n'
# describe says what a symbol names, as the standard's describe does
out=$(repl $'(defun priced (x) "X with its tax." (* x 11/10))\n(defvar *rate* 5 "the rate")\n(describe \'priced)\n(describe \'*rate*)\n(describe \'car)\n' 2>&1)
has describe-function $'PRICED\n  \\[symbol\\]\n\nPRICED names a defined function:\n  Lambda-list: \\(X\\)\n  Documentation:\n    X with its tax\\.\n'
has describe-variable $'\\*RATE\\* names a special variable:\n  Value: 5\n  Documentation:\n    the rate\n'
has describe-builtin $'CAR names a built-in function:\n  Documentation:\n    \\(car list\\)'


# --- the kernel restarts mid-session: the repl says so and reconnects
out=$( { printf '(+ 1 2)\n'; sleep 0.5
         "$JITI" stop --store "$S" >/dev/null
         printf '(+ 2 3)\n'; sleep 0.5
         start_kernel "$S" --fuel 0
         printf '(+ 3 4)\n:quit\n'; } | timeout 60 "$JITI" repl --store "$S" 2>&1); st=$?
ok restart-exit-0 "$([[ $st -eq 0 ]]; echo $?)"
has restart-before $'^3\n'
has restart-noticed "jiti repl: the kernel for $S closed the connection \(did it stop or restart\?\)"
has restart-no-kernel "jiti repl: no kernel is running for $S"
has restart-reconnected "jiti repl: reconnected: a new kernel serves $S \(pid [0-9]+, was [0-9]+\)"$'\n7'
ok restart-lost-call-not-run "$([[ ! $out =~ (^|$'\n')5$'\n' ]]; echo $?)"

# --- on a terminal: libedit, the prompt, Ctrl-C, Ctrl-D, the history file
H=$S/repl_history
rm -f "$H"
out=$(typed $'(+ 40 2)\n' $'(defun g (x)\n' $'  (* x 2))\n' $'(g 4)\n' $'(list 1\n' $'\003' \
            $':act (car 5)\n' $':abort\n' $':quit\n'); st=$?
ok tty-exit-0 "$([[ $st -eq 0 ]]; echo $?)"
has tty-banner "connected to the kernel for $S \\(jiti [0-9.]+, pid [0-9]+\\)"
has tty-prompt-idle $'jiti g[0-9]+ idle> \\(\\+ 40 2\\)\r?\n42\r?\n'
has tty-continuation $'\n +\\.\\.\\.>   \\(\\* x 2\\)\\)\r?\nG\r?\n'
has tty-ctrl-c $'\\(dropped the unfinished entry\\)\r?\njiti g[0-9]+ idle> :act'
has tty-prompt-paused 'jiti g[0-9]+ PAUSED 1\]> :abort'
ok tty-history-file "$([[ -f $H ]]; echo $?)"
ok tty-history-mode-0600 "$([[ $(stat -c %a "$H") == 600 ]]; echo $?)"
t tty-history-entries 0 $'^_HiStOrY_V2_\n\\(\\+\\\\04040\\\\0402\\)\n\\(defun\\\\040g\\\\040\\(x\\)\\\\012' -- cat "$H"
ok tty-dropped-entry-not-kept "$(! grep -q 'list' "$H"; echo $?)"
t tty-world 0 "^8$" -- value '(g 4)'
chmod 644 "$H"
# Ctrl-D on a continuation line drops the form, not the session
out=$(typed $'(list 1\n' $'\004' $'(+ 1 1)\n' $'\004'); st=$?
has tty-ctrl-d-drops-form $'\\(dropped the unfinished entry\\)\r?\njiti g[0-9]+ idle> \\(\\+ 1 1\\)\r?\n2\r?\n'
ok tty-ctrl-d-exit-0 "$([[ $st -eq 0 ]]; echo $?)"
has tty-mode-tightened "history file $H was not private \\(mode 0644\\); it is now 0600"
ok tty-history-mode-tightened "$([[ $(stat -c %a "$H") == 600 ]]; echo $?)"
{ echo _HiStOrY_V2_; for i in $(seq 1100); do echo "(+\\040$i)"; done; } >"$H"
typed $'(+ 2 2)\n' $':quit\n' >/dev/null
n=$(wc -l <"$H")
ok tty-history-bounded "$([[ $n -le 1001 && $n -ge 900 ]]; echo $?)"
t tty-history-newest-kept 0 $'\\(\\+\\\\0402\\\\0402\\)\n:quit$' -- cat "$H"
# Ctrl-C while a form runs: it is interrupted (by its key) and the debugger
# shows the pause with CONTINUE; a form there is a repair; :abort ends it
out=$(typed $'(progn (dotimes (i 25000) (expt 7 40000)) :late)\n' '~'$'\003' $'(+ 1 2)\n' $':abort\n' $':quit\n'); st=$?
ok tty-interrupt-exit-0 "$([[ $st -eq 0 ]]; echo $?)"
has tty-interrupted $'\njiti repl: interrupting attempt [0-9]+ \\(Ctrl-C again to stop waiting\\)'
has tty-interrupt-pause $'debugger entered at level 1 \\(generation [0-9]+\\): INTERACTIVE-INTERRUPT: Interactive interrupt\\.\r?\nrestarts:\r?\n  0: \\[CONTINUE\\] Continue the interrupted computation\\.'
has tty-repair-after-interrupt $'\nrepair value: 3\r?\n'
has tty-aborted-after-interrupt $'\naborted: '
ok tty-late-reply-skipped "$([[ ! $out =~ :LATE ]]; echo $?)"
# Ctrl-C while an :act runs: it is interrupted, the pause shown with CONTINUE
out=$(typed $':act (loop)\n' '~'$'\003' $':abort\n' $':quit\n'); st=$?
ok tty-act-interrupt-exit-0 "$([[ $st -eq 0 ]]; echo $?)"
has tty-act-interrupting $'jiti repl: interrupting attempt [0-9]+'
has tty-act-paused 'INTERACTIVE-INTERRUPT'
has tty-act-continue 'CONTINUE'
H2=$tmp/elsewhere_history
JITI_REPL_HISTORY=$H2 typed $':status\n' $':quit\n' >/dev/null
ok tty-history-env "$([[ -f $H2 && $(stat -c %a "$H2") == 600 ]]; echo $?)"
t tty-history-env-entries 0 ':status' -- cat "$H2"

# --- the prompt follows the world (tmux): another client's pause shows as
# a notice and a new prompt while the repl waits; its end too
if command -v tmux >/dev/null; then
  TM=(tmux -S "$tmp/tmux")
  screen() { "${TM[@]}" capture-pane -p -J -t r; }
  wait_screen() {  # wait_screen REGEX: up to 20 s for the screen to match
    for _ in $(seq 200); do [[ $(screen) =~ $1 ]] && return 0; sleep 0.1; done; return 1
  }
  "${TM[@]}" new-session -d -s r -x 110 -y 40 "JITI_REPL_HISTORY= '$JITI' repl --store '$S'; sleep 30"
  wait_screen 'jiti g[0-9]+ idle> $'; ok follow-prompt $?
  "$JITI" eval --store "$S" --on-error pause '(error "paused elsewhere")' >/dev/null
  wait_screen $'\\(the world was paused by another client at generation [0-9]+: SIMPLE-ERROR: paused elsewhere;\n[^\n]*\n+jiti g[0-9]+ PAUSED 1\\]> *$'
  ok follow-pause-noticed $? ; [[ $(screen) =~ 'restarts:' ]]; ok follow-no-dump "$((1 - $?))"
  "$JITI" act --store "$S" --generation "$(jfield generation)" --abort >/dev/null
  wait_screen $'\\(the pause ended: the world is idle at generation [0-9]+\\)\n+jiti g[0-9]+ idle> *$'; ok follow-pause-ended $?
  "${TM[@]}" send-keys -t r '(+ 20 22)' Enter
  wait_screen $'\n42\n'; ok follow-still-works $?
  # Tab completes symbols from the running world (the kernel's complete
  # request): a function the program defined, a keyword, an external
  # symbol of a package, a package name and then an internal symbol
  "${TM[@]}" send-keys -t r '(price' Tab '10)' Enter
  wait_screen $'\\(priced 10\\)\n11\n'; ok tab-world-function $?
  "${TM[@]}" send-keys -t r '(list :test-n' Tab ')' Enter
  wait_screen $'\\(list :test-not \\)\n\\(:TEST-NOT\\)\n'; ok tab-keyword $?
  "${TM[@]}" send-keys -t r '(cl:ca' Tab
  wait_screen $'\ncl:caaaar  cl:caaadr[^\n]*\n(.*\n)*[^\n]*cl:call-next-method[^\n]*\n(.*\n)*jiti g[0-9]+ idle> \\(cl:ca$'
  ok tab-lists-candidates $?
  "${TM[@]}" send-keys -t r 'r' Tab "'(1 2))" Enter
  wait_screen $'\\(cl:car \'\\(1 2\\)\\)\n1\n'; ok tab-external-symbol $?
  "${TM[@]}" send-keys -t r '(common-lisp-us' Tab ':pric' Tab '10)' Enter
  wait_screen $'\\(common-lisp-user::priced 10\\)\n11\n'; ok tab-package-then-internal $?
  "${TM[@]}" kill-server
else
  echo "tmux not installed: the prompt-follows-the-world checks are skipped"
fi

"$JITI" stop --store "$S" >/dev/null
# sanitizer builds: no report from the kernel or its workers
if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$tmp/kernel.log"; then
  fail=$((fail+1)); echo "FAIL sanitizer reports in the kernel log:"; grep -E -A20 "Sanitizer|runtime error" "$tmp/kernel.log" | head -60
else pass=$((pass+1)); fi

finish
