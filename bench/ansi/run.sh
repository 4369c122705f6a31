#!/usr/bin/env bash
# Conformance measure: run chapters of the public ANSI Common Lisp test suite
# (github.com/pfdietz/ansi-test) under jiti (or SBCL) and print pass rates.
#
#   bench/ansi/run.sh [--suite DIR] [--lisp jiti|sbcl] [--jiti PATH]
#                     [--chapters a,b,...] [--files x.lsp,...] [--timeout S]
#                     [--keep DIR] [--verbose] [--harness rt]
#
# The suite is not part of this repository.  It is found at run time:
# --suite DIR (a checkout), else $ANSI_TEST_DIR, else $ANSI_TEST_GIT (a git
# directory, exported with git archive), else it is cloned from GitHub into
# ${XDG_CACHE_HOME:-~/.cache}/jiti/ansi-test.
#
# Each test file runs in a fresh process: driver.lisp, then a generated file
# holding the support files and the test file as strings.  A process that
# does not finish within the timeout is run again without the test it was
# in (that test fails), so one hanging test costs only itself.  Tests named
# by "(deftest NAME" in a file but never reported count as failed.
# Output: one line per chapter (passed/total, %), then the total; per-test
# results in --keep DIR (default: a temporary directory, removed).  --files
# runs only those test files of the chapters; --verbose keeps each run's
# log in the --keep directory, with every support form that failed.
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
keep=""
files=""
verbose=""
harness=""

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite=${2:?}; shift 2 ;;
    --lisp) lisp=${2:?}; shift 2 ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --chapters) chapters=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --keep) keep=${2:?}; shift 2 ;;
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

# The support files every chapter needs, in the suite's own load order.
COMMON="rt-package.lsp cl-test-package.lsp auxiliary/ansi-aux-macros.lsp universe.lsp auxiliary/random-aux.lsp auxiliary/ansi-aux.lsp cl-symbol-names.lsp"

# gen CHAPTER TESTFILE SKIPFILE > generated file
gen() {
  local chapter=$1 file=$2 skip=$3 f
  printf '(setq cl-user::*ansi-skip* (quote ('
  [ -s "$skip" ] && sed 's/.*/"&"/' "$skip" | tr '\n' ' '
  printf ')))\n'
  [ -n "$verbose" ] && printf '(setq cl-user::*ansi-verbose* t)\n'
  for f in rt-package.lsp; do
    printf '(cl-user::ansi-load "%s" ' "$f"; lisp_string "$suite/$f"; printf ')\n'
  done
  printf '(cl-user::ansi-harness-ready)\n'
  for f in $COMMON $(aux_files "$chapter"); do
    [ "$f" = rt-package.lsp ] && continue
    printf '(cl-user::ansi-load "%s" ' "$f"; lisp_string "$suite/$f"; printf ')\n'
  done
  printf '(cl-user::ansi-run-file "%s" ' "$file"; lisp_string "$suite/$chapter/$file"; printf ')\n'
  printf '(cl-user::ansi-done)\n'
}

# Support files a chapter's load.lsp compile-and-loads.
aux_files() {
  grep -o 'compile-and-load "ANSI-TESTS:AUX;[^"]*"' "$suite/$1/load.lsp" |
    sed 's/.*AUX;\([^"]*\)"/auxiliary\/\1/'
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

# Test files a chapter's load.lsp loads, in order.
test_files() {
  grep -o '(load\(-here\)\? "[^"]*\.lsp")' "$suite/$1/load.lsp" | sed 's/.*"\(.*\)")/\1/'
}

run_one() {
  local gen_file=$1 log=$2
  case "$lisp" in
    jiti) timeout -k 5 "$timeout_s" stdbuf -oL "$jiti" run --depth 20000 "$HERE/driver.lisp" "$gen_file" ;;
    sbcl) timeout -k 5 "$timeout_s" sbcl --noinform --non-interactive \
            --eval '(setf *read-default-float-format* (quote single-float))' \
            --load "$HERE/driver.lisp" --load "$gen_file" ;;
  esac >"$log" 2>&1 </dev/null
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
  : >"$out/$ch.results"
  if [ -n "$harness" ]; then
    run_harness "$ch"
    p=$(awk '$2 == "PASS"' "$out/$ch.results" | wc -l)
    n=$(wc -l <"$out/$ch.results")
    total_pass=$((total_pass + p)); total_all=$((total_all + n))
    awk -v c="$ch" -v p="$p" -v n="$n" 'BEGIN { printf "%-24s %5d / %5d  %5.1f%%\n", c, p, n, n ? 100 * p / n : 0 }'
    continue
  fi
  for tf in $(test_files "$ch"); do
    [ -f "$suite/$ch/$tf" ] || continue
    [ -z "$files" ] || [[ $files == *,$tf,* ]] || continue
    skip=$work/skip
    : >"$skip"
    results=$work/res
    : >"$results"
    for attempt in 1 2 3 4 5 6 7 8; do
      gen "$ch" "$tf" "$skip" >"$work/gen.lisp"
      run_one "$work/gen.lisp" "$work/log"
      rc=$?
      grep -a '^@@ANSI \(PASS\|FAIL\) ' "$work/log" | sed 's/^@@ANSI //' >"$results"
      grep -aq '^@@ANSI ERRORS' "$work/log" && break
      # did not finish: the test after the last one reported hung or crashed
      last=$(tail -n 1 "$results" | awk '{print $2}')
      next=$(named_tests "$suite/$ch/$tf" |
             awk -v last="$last" 'found {print; exit} $0 == last {found=1} last == "" {print; exit}')
      [ -z "$next" ] && break
      grep -qx "$next" "$skip" && break
      echo "$next" >>"$skip"
      echo "  $ch/$tf: run $attempt stopped (status $rc) in or after $next" >&2
    done
    # tests named in the file but never reported failed
    named_tests "$suite/$ch/$tf" | sort -u >"$work/named"
    awk '{print $2}' "$results" | sort -u >"$work/seen"
    comm -23 "$work/named" "$work/seen" | sed 's/.*/FAIL & not reported (did not read or run)/' >>"$results"
    sed "s|^|$tf |" "$results" >>"$out/$ch.results"
    [ -n "$verbose" ] && cp "$work/log" "$out/$ch.$tf.log"
  done
  p=$(awk '$2 == "PASS"' "$out/$ch.results" | wc -l)
  n=$(wc -l <"$out/$ch.results")
  total_pass=$((total_pass + p)); total_all=$((total_all + n))
  awk -v c="$ch" -v p="$p" -v n="$n" 'BEGIN { printf "%-24s %5d / %5d  %5.1f%%\n", c, p, n, n ? 100 * p / n : 0 }'
done
awk -v p="$total_pass" -v n="$total_all" 'BEGIN { printf "%-24s %5d / %5d  %5.1f%%\n", "total", p, n, n ? 100 * p / n : 0 }'
