#!/usr/bin/env bash
# Check the repair benchmark's cases under SBCL (check-sbcl.lisp says what
# is proved): every case, or the case directories given.
#   bash bench/repair/check-sbcl.sh [bench/repair/cases/NN-name ...]
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBCL=${SBCL:-sbcl}
args=()
if [ $# -eq 0 ]; then args=("\"$here/cases\""); fi
for d in "$@"; do args+=("\"$(cd "$d" && pwd)\""); done
exec "$SBCL" --noinform --non-interactive --no-userinit --load "$here/check-sbcl.lisp" \
  --eval "(repair-bench-check:main ${args[*]})"
