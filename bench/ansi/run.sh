#!/usr/bin/env bash
# Conformance measure: run chapters of the public ANSI Common Lisp test suite
# (github.com/pfdietz/ansi-test) under jiti (or SBCL) and print pass rates.
#
#   bench/ansi/run.sh [--suite DIR] [--lisp jiti|sbcl] [--jiti PATH]
#                     [--chapters a,b,...] [--files x.lsp,...] [--timeout S]
#                     [--stall S] [--keep DIR] [--reference DIR] [--verbose]
#                     [--harness rt]
#
# The suite is not part of this repository.  It is found at run time:
# --suite DIR (a checkout), else $ANSI_TEST_DIR, else $ANSI_TEST_GIT (a git
# directory, exported with git archive), else it is cloned from GitHub into
# ${XDG_CACHE_HOME:-~/.cache}/jiti/ansi-test.
#
# Each chapter runs in a fresh process, as the suite's own harness runs it:
# driver.lisp, then a generated file holding the support files and the
# chapter's test files (those its load.lsp loads, nested load files
# followed) as strings.  A process that prints nothing for --stall seconds
# (default 30), or runs past --timeout seconds plus 5 per test file, is
# run again without the test it was in (that test fails), so one hanging
# test costs only itself.  Tests named by "(deftest NAME" in a file but
# never reported count as failed; tests left out by a disabled note (see
# driver.lisp) are not counted.
# Output: one line per chapter (passed/total, %), then the total; per-test
# results in --keep DIR (default: a temporary directory, removed).  --files
# runs only those test files of the chapters; --verbose keeps each run's
# log in the --keep directory, with every support form that failed.
# --reference DIR names the --keep directory of an earlier run (of SBCL,
# say): the tests that run reported are the tests, and each of them this
# run did not report -- a test a macro makes, when the macro failed here --
# counts as failed, so both Lisps are measured on the same tests.
#
# --harness rt runs each chapter instead through the suite's own harness,
# in one process: gclload1.lsp (rt, its package, the auxiliary files, the
# ANSI-TESTS logical host), the chapter's load.lsp (compile-and-load
# through the logical pathname), RT:DO-TESTS (harness.lisp).  jiti reads a
# copy of the suite as its file table (jiti run --files), SBCL as its
# directory; results are per test (file column "rt"); a test never
# reported (the run stopped) counts as failed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

chapters="cons,data-and-control-flow,iteration,numbers,strings,characters,hash-tables,conditions,sequences,symbols"
lisp=jiti
jiti="$ROOT/build/jiti"
suite="${ANSI_TEST_DIR:-}"
timeout_s=120
stall=30
keep=""
files=""
verbose=""
reference=""
harness=""

usage() { sed -n '2,39p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite=${2:?}; shift 2 ;;
    --lisp) lisp=${2:?}; shift 2 ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --chapters) chapters=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --stall) stall=${2:?}; shift 2 ;;
    --keep) keep=${2:?}; shift 2 ;;
    --reference) reference=${2:?}; shift 2 ;;
    --files) files=,${2:?},; shift 2 ;;
    --verbose) verbose=t; shift ;;
    --harness) harness=${2:?}; shift 2
               [ "$harness" = rt ] || { echo "run.sh: --harness takes rt" >&2; exit 2; } ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/jiti-ansi.XXXXXX")
[ -n "${ANSI_KEEP_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
out=${keep:-$work/results}
mkdir -p "$out"

if [ -z "$suite" ]; then
  if [ -n "${ANSI_TEST_GIT:-}" ]; then
    suite=$work/suite
    mkdir -p "$suite"
    git --git-dir="$ANSI_TEST_GIT" archive HEAD | tar -x -C "$suite" || exit 1
  else
    suite=${XDG_CACHE_HOME:-$HOME/.cache}/jiti/ansi-test
    if [ ! -d "$suite/.git" ]; then
      mkdir -p "$(dirname "$suite")"
      git clone -q --depth 1 https://github.com/pfdietz/ansi-test.git "$suite" || {
        echo "run.sh: cannot fetch the suite; give --suite DIR" >&2; exit 1; }
    fi
  fi
fi
[ -f "$suite/rt.lsp" ] || { echo "run.sh: $suite is not an ansi-test checkout" >&2; exit 1; }

case "$lisp" in
  jiti) [ -x "$jiti" ] || { echo "run.sh: no jiti at $jiti" >&2; exit 1; } ;;
  sbcl) command -v sbcl >/dev/null || { echo "run.sh: no sbcl" >&2; exit 1; } ;;
  *) echo "run.sh: --lisp is jiti or sbcl" >&2; exit 2 ;;
esac

# A file's text as a Lisp string literal.
lisp_string() { printf '"'; sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' "$1"; printf '"'; }

# The support files every chapter needs, in the order of the suite's own
# gclload1.lsp: the harness (rt), the test package, the auxiliary files and
# the notes.
COMMON="rt-package.lsp rt.lsp cl-test-package.lsp auxiliary/ansi-aux-macros.lsp universe.lsp auxiliary/random-aux.lsp auxiliary/ansi-aux.lsp cl-symbol-names.lsp notes.lsp"

# gen CHAPTER SKIPFILE TESTFILE... > generated file
gen() {
  local chapter=$1 skip=$2 f
  shift 2
  printf '(setq cl-user::*ansi-skip* (quote ('
  [ -s "$skip" ] && sed 's/.*/"&"/' "$skip" | tr '\n' ' '
  printf ')))\n'
  [ -n "$verbose" ] && printf '(setq cl-user::*ansi-verbose* t)\n'
  for f in $COMMON; do
    printf '(cl-user::ansi-load "%s" ' "$f"; lisp_string "$suite/$f"; printf ')\n'
  done
  printf '(cl-user::ansi-harness-notes)\n'
  for f in $(aux_files "$chapter") $(data_files "$chapter"); do
    printf '(cl-user::ansi-load "%s" ' "$f"; lisp_string "$suite/$f"; printf ')\n'
  done
  printf '(cl-user::ansi-run-files (list'
  for f in "$@"; do
    printf ' (cons "%s" ' "$f"; lisp_string "$suite/$chapter/$f"; printf ')\n'
  done
  printf '))\n(cl-user::ansi-done)\n'
}

# The load files of a chapter: its load.lsp and those it loads in turn
# (printer's format/load.lsp), paths relative to the chapter.
load_files() {
  local ch=$1 lf=${2:-load.lsp} f
  echo "$lf"
  for f in $(grep -o '(load\(-here\)\? "[^"]*load\.lsp")' "$suite/$ch/$lf" | sed 's/.*"\(.*\)")/\1/'); do
    load_files "$ch" "$f"
  done
}

# Data files a chapter's tests read that none of its load files loads:
# printer/format/roman-numerals.lsp defines *roman-numerals*, the table
# FORMAT.R.19 checks ~@R against.  Loaded as support, after the auxiliary
# files (paths relative to the suite).
data_files() {
  case $1 in
    printer) echo printer/format/roman-numerals.lsp ;;
  esac
}

# Support files a chapter's load files compile-and-load.
aux_files() {
  local lf
  for lf in $(load_files "$1"); do
    grep -o 'compile-and-load "ANSI-TESTS:AUX;[^"]*"' "$suite/$1/$lf" |
      sed 's/.*AUX;\([^"]*\)"/auxiliary\/\1/'
  done
}

# The tests a file names ("(deftest NAME" at the start of a line), outside
# #| ... |# comments, upcased.
named_tests() {
  awk '{ line = $0; out = "";
         while (line != "") {
           if (depth > 0) { i = index(line, "|#"); j = index(line, "#|");
                            if (j && (!i || j < i)) { depth++; line = substr(line, j + 2) }
                            else if (i) { depth--; line = substr(line, i + 2) } else line = "" }
           else { j = index(line, "#|"); if (j) { out = out substr(line, 1, j - 1); depth++; line = substr(line, j + 2) }
                  else { out = out line; line = "" } } }
         print out }' "$1" | grep -ao '^(deftest [^ )]*' | awk '{print toupper($2)}'
}

# Test files a chapter's load files load, in order (a nested load file is
# replaced by the files it loads).
test_files() {
  local ch=$1 lf=${2:-load.lsp} f
  for f in $(grep -o '(load\(-here\)\? "[^"]*\.lsp")' "$suite/$ch/$lf" | sed 's/.*"\(.*\)")/\1/'); do
    case $f in
      load.lsp|*/load.lsp) test_files "$ch" "$f" ;;
      *) echo "$f" ;;
    esac
  done
}

# run_one GENFILE LOG SECONDS: the run stops after SECONDS in all, or
# after $stall seconds without a line of output (a test that hangs).  The
# tests open the suite's data files (sandbox/*.txt) by relative names, as
# the suite's harness runs them from its sandbox: jiti gets a copy of them
# as its world's files (jiti run --files), SBCL runs in a fresh copy of the
# directory; what the tests write stays in the copy.
run_one() {
  local gen_file=$1 log=$2 limit=$3 pid size last=-1 idle=0 box=$work/sandbox
  rm -rf "$box"
  mkdir -p "$box"
  [ -d "$suite/sandbox" ] && (cd "$suite/sandbox" && tar -cf - .) | tar -xf - -C "$box"
  case "$lisp" in
    jiti) timeout -k 5 "$limit" stdbuf -oL "$jiti" run --depth 20000 --files "$box" \
            "$HERE/driver.lisp" "$gen_file" ;;
    sbcl) (cd "$box" && timeout -k 5 "$limit" sbcl --noinform --non-interactive \
             --eval '(setf *read-default-float-format* (quote single-float))' \
             --load "$HERE/driver.lisp" --load "$gen_file") ;;
  esac >"$log" 2>&1 </dev/null &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    size=$(stat -c %s "$log" 2>/dev/null || echo 0)
    if [ "$size" = "$last" ]; then
      idle=$((idle + 1))
      # (timeout passes the signal on to the Lisp)
      if [ "$idle" -ge "$stall" ]; then pkill -TERM -P "$pid" 2>/dev/null; break; fi
    else
      idle=0; last=$size
    fi
  done
  wait "$pid"
}

# run_harness CHAPTER: the chapter through the suite's own rt harness, in a
# copy of the suite; per-test results into $out/CHAPTER.results.
run_harness() {
  local ch=$1 tree=$work/tree log=$work/log tf skip="" attempt hung
  rm -rf "$tree"
  mkdir -p "$tree"
  (cd "$suite" && tar --exclude=.git -cf - .) | tar -xf - -C "$tree"
  # a test that does not finish is skipped in the next run (8 runs at most)
  for attempt in 1 2 3 4 5 6 7 8; do
    sed -e "s/@CHAPTER@/$ch/" -e "s/@SKIP@/$skip/" "$HERE/harness.lisp" >"$tree/jiti-harness.lsp"
    case "$lisp" in
      jiti) (cd "$tree" && timeout -k 5 "$timeout_s" stdbuf -oL "$jiti" run --depth 20000 --files "$tree" \
              -e '(load "jiti-harness.lsp")') ;;
      sbcl) (cd "$tree" && timeout -k 5 "$timeout_s" sbcl --noinform --non-interactive \
              --eval '(setf *read-default-float-format* (quote single-float))' \
              --load jiti-harness.lsp) ;;
    esac 2>&1 </dev/null | head -c 200000000 >"$log"   # a runaway printer stops at 200 MB
    grep -aq '^@@ANSI DONE' "$log" && break
    hung=$(grep -a '^@@ANSI \(START\|PASS\|FAIL\) ' "$log" | tail -n 1 | awk '$2 == "START" {print $3}')
    [ -n "$hung" ] || { echo "  $ch: the harness stopped before its tests (see --verbose)" >&2; break; }
    echo "  $ch: run $attempt stopped in $hung" >&2
    skip="$skip \"$hung\""
  done
  grep -a '^@@ANSI \(PASS\|FAIL\) ' "$log" | sed 's/^@@ANSI //' | awk '{print "rt", $1, toupper($2)}' >"$out/$ch.results"
  # the tests the chapter's files name that were never reported
  for tf in $(test_files "$ch"); do
    [ -f "$suite/$ch/$tf" ] && named_tests "$suite/$ch/$tf"
  done | sort -u >"$work/named"
  awk '{print $3}' "$out/$ch.results" | sort -u >"$work/seen"
  comm -23 "$work/named" "$work/seen" | sed 's/.*/rt FAIL & not-reported/' >>"$out/$ch.results"
  [ -n "$verbose" ] && cp "$log" "$out/$ch.harness.log"
  rm -rf "$tree"
}

total_pass=0 total_all=0
IFS=, read -r -a chs <<<"$chapters"
for ch in "${chs[@]}"; do
  [ -f "$suite/$ch/load.lsp" ] || { echo "run.sh: no chapter $ch" >&2; exit 2; }
  if [ -n "$harness" ]; then
    run_harness "$ch"
    p=$(awk '$2 == "PASS"' "$out/$ch.results" | wc -l)
    n=$(wc -l <"$out/$ch.results")
    total_pass=$((total_pass + p)); total_all=$((total_all + n))
    awk -v c="$ch" -v p="$p" -v n="$n" 'BEGIN { printf "%-24s %5d / %5d  %5.1f%%\n", c, p, n, n ? 100 * p / n : 0 }'
    continue
  fi
  tfs=()
  for tf in $(test_files "$ch"); do
    [ -f "$suite/$ch/$tf" ] || continue
    [ -z "$files" ] || [[ $files == *,$tf,* ]] || continue
    tfs+=("$tf")
  done
  # One image runs the chapter, as the suite's harness does; when a test
  # does not finish (a hang past the time limit, a crash), the chapter runs
  # again without it.
  limit=$((timeout_s + 5 * ${#tfs[@]}))
  skip=$work/skip
  : >"$skip"
  results=$work/res
  for attempt in 1 2 3 4 5 6 7 8; do
    gen "$ch" "$skip" "${tfs[@]}" >"$work/gen.lisp"
    run_one "$work/gen.lisp" "$work/log" "$limit"
    rc=$?
    # FILE PASS|FAIL NAME [why]
    grep -a '^@@ANSI \(PASS\|FAIL\) ' "$work/log" | sed 's/^@@ANSI \([A-Z]*\) \([^ ]*\) /\2 \1 /' >"$results"
    grep -a '^@@ANSI DISABLED ' "$work/log" | awk '{print $3, $4}' >"$work/disabled"
    grep -aq '^@@ANSI ERRORS' "$work/log" && break
    # did not finish: the test after the last one reported hung or crashed
    last=$(grep -a '^@@ANSI \(PASS\|FAIL\|DISABLED\) ' "$work/log" | tail -n 1 | awk '{print $4}')
    next=$(grep -a '^@@ANSI TEST ' "$work/log" | awk '{print $4}' |
           awk -v last="$last" 'found {print; exit} $0 == last {found=1} last == "" {print; exit}')
    [ -z "$next" ] && break
    grep -qx "$next" "$skip" && break
    echo "$next" >>"$skip"
    echo "  $ch: run $attempt stopped (status $rc) in or after $next" >&2
  done
  [ -n "$verbose" ] && cp "$work/log" "$out/$ch.log"
  # The tests: those the reference run reported (a macro's tests too; not
  # those inside #+(or) or a comment the name search takes for tests),
  # else those each file names by "(deftest NAME", less those a disabled
  # note leaves out, which rt does not count.  Each of them not reported
  # here failed; a test only this Lisp reads (under #-sbcl, say) is not one.
  if [ -n "$reference" ] && [ -f "$reference/$ch.results" ]; then
    awk '$0 !~ / not reported \(/ {print $1, $3}' "$reference/$ch.results" | sort -u >"$work/named"
    awk 'NR == FNR {t[$1 " " $2]; next} ($1 " " $3) in t' "$work/named" "$results" >"$work/res2"
    mv "$work/res2" "$results"
  else
    for tf in "${tfs[@]}"; do named_tests "$suite/$ch/$tf" | sed "s|^|$tf |"; done | sort -u |
      comm -23 - <(sort -u "$work/disabled") >"$work/named"
  fi
  awk '{print $1, $3}' "$results" | sort -u >"$work/seen"
  comm -23 "$work/named" "$work/seen" | awk '{print $1, "FAIL", $2, "not reported (did not read or run)"}' >>"$results"
  cp "$results" "$out/$ch.results"
  p=$(awk '$2 == "PASS"' "$out/$ch.results" | wc -l)
  n=$(wc -l <"$out/$ch.results")
  total_pass=$((total_pass + p)); total_all=$((total_all + n))
  awk -v c="$ch" -v p="$p" -v n="$n" 'BEGIN { printf "%-24s %5d / %5d  %5.1f%%\n", c, p, n, n ? 100 * p / n : 0 }'
done
awk -v p="$total_pass" -v n="$total_all" 'BEGIN { printf "%-24s %5d / %5d  %5.1f%%\n", "total", p, n, n ? 100 * p / n : 0 }'
