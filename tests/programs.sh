#!/usr/bin/env bash
# Whole programs, written the way people (and models) write Common Lisp,
# whose output must match SBCL's byte for byte.  Each tests/programs/NAME.lisp
# has its expected output in NAME.out, made by SBCL:
#
#   tests/programs.sh JITI              run every program, compare
#   tests/programs.sh --regen           rewrite the .out files with `sbcl --script`
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR="$HERE/programs"

if [ "${1:-}" = --regen ]; then
  for f in "$DIR"/*.lisp; do
    sbcl --script "$f" > "${f%.lisp}.out" 2>&1 || echo "programs.sh: sbcl failed on $f" >&2
  done
  exit 0
fi

JITI=${1:?usage: programs.sh JITI | --regen}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jiti-programs.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
n=0
for f in "$DIR"/*.lisp; do
  n=$((n + 1))
  name=$(basename "$f" .lisp)
  if ! "$JITI" run "$f" > "$TMP/out" 2>&1; then
    echo "FAIL $name: jiti exited with an error"; head -20 "$TMP/out"
    fail=$((fail + 1)); continue
  fi
  if ! diff "$TMP/out" "${f%.lisp}.out" > "$TMP/diff" 2>&1; then
    echo "FAIL $name: output differs from SBCL's (< jiti, > sbcl)"; head -30 "$TMP/diff"
    fail=$((fail + 1))
  fi
done
echo "programs: $((n - fail)) of $n match SBCL"
[ "$fail" -eq 0 ]
