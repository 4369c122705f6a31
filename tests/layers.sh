#!/usr/bin/env bash
# layers.sh — the controller's folders include only what docs/architecture.md
# allows ("Who may include whom"), and the explicit source lists of the
# CMake files name every source there is.  Usage: bash tests/layers.sh [SOURCE_DIR]
# Every quoted include of a controller file is resolved to the folder that
# holds the header; an include the table below does not allow fails.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# folder -> the folders (and parts outside controller/) it may include
declare -A may=(
  [main]="run session model client offline daemon workerproc protocol engine cli kernel store worker json"
  [run]="cli kernel"
  [cli]="kernel"
  [protocol]=""
  [engine]="protocol cli kernel store worker json"
  [workerproc]="engine protocol cli kernel store worker json"
  [client]="protocol engine cli kernel store"
  [offline]="client workerproc protocol engine cli kernel store worker"
  [daemon]="workerproc protocol engine cli kernel store worker json"
  [model]=""
  [session]="model client protocol engine cli kernel store"
  [supervise]="session model client offline daemon workerproc protocol engine cli kernel store worker"
)

# header name -> its folder
declare -A home=()
for h in controller/*/*.h; do d=${h#controller/}; home[$(basename "$h")]=${d%%/*}; done
for part in kernel store worker json; do
  for h in "$part"/*.h; do [[ -e $h ]] && home[$(basename "$h")]=$part; done
done

fails=0 checked=0
for f in controller/*/*.[ch]; do
  d=${f#controller/}; d=${d%%/*}
  if [[ ! -v may[$d] ]]; then
    echo "FAIL $f: folder controller/$d/ is not in the map"; fails=$((fails+1)); continue
  fi
  while read -r inc; do
    h=${inc#\"}; h=${h%\"}
    [[ -v home[$h] ]] || continue          # system and third-party headers
    to=${home[$h]}
    checked=$((checked+1))
    [[ $to == "$d" ]] && continue
    if [[ " ${may[$d]} " != *" $to "* ]]; then
      echo "FAIL $f includes $h ($to/): controller/$d/ may include only: ${may[$d]:-nothing}"
      fails=$((fails+1))
    fi
  done < <(sed -n 's/^#include \("[^"]*"\).*/\1/p' "$f")
done
echo "$checked includes checked, $fails not allowed"

# every source is in its list (a file a merge brings in is not forgotten)
missing=0
for f in kernel/*.c kernel/lisp/*.lisp; do
  grep -qw "$(basename "$f")" CMakeLists.txt || { echo "FAIL $f is not in CMakeLists.txt's lists"; missing=$((missing+1)); }
done
for f in controller/*/*.c; do
  d=$(dirname "$f")
  if [[ -f $d/CMakeLists.txt ]]; then  # a folder that is a library of its own lists its sources
    grep -qw "$(basename "$f")" "$d/CMakeLists.txt" ||
      { echo "FAIL $f is not in $d/CMakeLists.txt's list"; missing=$((missing+1)); }
  else
    grep -qw "${f#controller/}" controller/CMakeLists.txt ||
      { echo "FAIL $f is not in controller/CMakeLists.txt's lists"; missing=$((missing+1)); }
  fi
done
echo "$missing sources missing from the CMake lists"
[[ $fails == 0 && $missing == 0 ]]
