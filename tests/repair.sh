#!/usr/bin/env bash
# `jiti repair`: the policy of automatic repair on a store no kernel serves
# and through a running kernel — rules put, replaced, listed, removed,
# selectors folded as the reader folds names, kept across a kernel
# restart; every bad input refused with a clear message and nothing kept.
#   bash tests/repair.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-repair.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s

t help 0 "usage: jiti repair enable SELECTOR" -- "$JITI" repair --help
t listed 0 "repair +choose the functions automatic repair looks after" -- "$JITI" --help
t no-args 2 "usage: jiti repair" -- "$JITI" repair
t bad-action 2 "'purge' is not enable, disable or list" -- "$JITI" repair purge x --store "$S"
t list-takes-none 2 "usage: jiti repair" -- "$JITI" repair list x --store "$S"
t mode-with-disable 2 "--mode and --expect-\* go with enable" -- "$JITI" repair disable f --mode pause --store "$S"
t mode-needs-value 2 "--mode needs a value" -- "$JITI" repair enable f --mode
t no-store 1 "" -- "$JITI" repair list --store "$tmp/nowhere"
"$JITI" init --store "$S" >/dev/null

# --- offline: the store itself
t empty 0 "^no rules: no function becomes an incident" -- "$JITI" repair list --store "$S"
t enable-folds 0 "^DISPENSE +fail +expects condition INSUFFICIENT-CREDIT, report no credit$" -- \
  "$JITI" repair enable dispense --expect-condition INSUFFICIENT-CREDIT --expect-report 'no credit' --store "$S"
t enable-package 0 "APP: +pause" -- "$JITI" repair enable app: --mode pause --store "$S"
t enable-prefix 0 "APP::PARSE-\* +fail" -- "$JITI" repair enable 'App:parse-*' --store "$S"
t user-package-dropped 0 "
RUN +fail" -- "$JITI" repair enable cl-user::run --store "$S"
t bars-kept 0 "\|mixed Case\| +fail" -- "$JITI" repair enable '|mixed Case|' --store "$S"
t bad-selector 1 "invalid-arguments: the selector bad sel is no name" -- "$JITI" repair enable 'bad sel' --store "$S"
t two-packages 1 "more than one package marker" -- "$JITI" repair enable 'a::b::c' --store "$S"
t bad-mode 1 "invalid-request: \"mode\" must be \"fail\" or \"pause\"" -- \
  "$JITI" repair enable f --mode retry --store "$S"
t disable-unknown 1 "not-found: no rule has the selector NOPE" -- "$JITI" repair disable nope --store "$S"
t nothing-bad-kept 0 "^APP: +pause
APP::PARSE-\* +fail
DISPENSE +fail .*
RUN +fail
\|mixed Case\| +fail$" -- "$JITI" repair list --store "$S"
t replace 0 "
DISPENSE +pause
" -- "$JITI" repair enable DISPENSE --mode pause --store "$S"
t json 0 '"selector": "DISPENSE",
      "mode": "pause",
      "expected": \[\]' -- "$JITI" repair list --json --store "$S"

# --- through the kernel, and across its restart
start_kernel "$S"; ok kernel-starts $?
t live-list 0 "DISPENSE +pause" -- "$JITI" repair list --store "$S"
t live-disable 0 "^APP: +pause
APP::PARSE-\* +fail
RUN +fail
\|mixed Case\| +fail$" -- "$JITI" repair disable dispense --store "$S"
t live-enable 0 "VEND +fail" -- "$JITI" repair enable vend --store "$S"
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S"; ok kernel-restarts $?
t kept-across-restart 0 "RUN +fail
VEND +fail
\|mixed Case\| +fail$" -- "$JITI" repair list --store "$S"
"$JITI" stop --store "$S" >/dev/null
t kept-offline 0 "VEND +fail
\|mixed Case\| +fail$" -- "$JITI" repair list --store "$S"
finish
