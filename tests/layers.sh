#!/usr/bin/env bash
# layers.sh — every part of jiti includes only what docs/architecture.md
# allows ("Who may include whom"), and the explicit source lists of the
# CMake files name every source there is.  Usage: bash tests/layers.sh [SOURCE_DIR]
#
# The controller's table is the build's own: the MAY_INCLUDE lists of the
# jiti_controller_folder calls in controller/CMakeLists.txt and
# controller/session/CMakeLists.txt, which make each folder's include path.
# The build finds no header outside that path; this check also sees the
# includes a configuration leaves out (#ifdef), the parts outside
# controller/ (kernel/, worker/, store/, json/: their tables are below),
# the kernel's internal headers, which no other part may include (only
# jiti.h, jiti_world.h and the limits table, jiti_limits.h), and
# quoted includes with a directory in them, which would step round an
# include path.  Every quoted include is resolved to the part that holds
# the header; an include the table does not allow fails.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# part -> the parts it may include
declare -A may=(
  [kernel]=""
  [json]=""
  [store]="json"
  [worker]="kernel json"
  [model]=""                  # a library of its own (controller/model/CMakeLists.txt)
  [etcd]="model"              # a library of its own on model/'s HTTP transport (controller/etcd/CMakeLists.txt)
)
# the controller's folders, from the CMake files
while IFS='|' read -r name list; do
  [[ -n $name ]] && may[$name]=$list
done < <(cat controller/CMakeLists.txt controller/session/CMakeLists.txt | awk '
  /^[[:space:]]*#/ { next }
  /jiti_controller_folder\(/ { inside = 1; buf = "" }
  inside {
    buf = buf " " $0
    if ($0 ~ /\)/) {
      inside = 0
      sub(/.*jiti_controller_folder\(/, "", buf); sub(/\).*/, "", buf)
      n = split(buf, w, /[[:space:]]+/); name = ""; list = ""; mode = ""
      for (k = 1; k <= n; k++) {
        if (w[k] == "") continue
        if (name == "") { name = w[k]; continue }
        if (w[k] == "MAY_INCLUDE" || w[k] == "SOURCES" || w[k] == "TESTHOOKS") { mode = w[k]; continue }
        if (mode == "MAY_INCLUDE") list = list (list == "" ? "" : " ") w[k]
      }
      print name "|" list
    }
  }')

# header name -> its part (a folder of controller/, or kernel, store, worker, json)
declare -A home=()
for h in controller/*/*.h; do d=${h#controller/}; home[$(basename "$h")]=${d%%/*}; done
for part in kernel store worker json; do
  for h in "$part"/*.h; do [[ -e $h ]] && home[$(basename "$h")]=$part; done
done

fails=0 checked=0
for f in controller/*/*.[ch] kernel/*.[ch] worker/*.[ch] store/*.[ch] json/*.[ch]; do
  [[ -e $f ]] || continue
  if [[ $f == controller/* ]]; then d=${f#controller/}; d=${d%%/*}; else d=${f%%/*}; fi
  if [[ ! -v may[$d] ]]; then
    echo "FAIL $f: folder $d/ is not in the map (add it with jiti_controller_folder in controller/CMakeLists.txt)"
    fails=$((fails+1)); continue
  fi
  while read -r inc; do
    h=${inc#\"}; h=${h%\"}
    if [[ $h == */* ]]; then
      echo "FAIL $f includes \"$h\": name a header by its file name alone (the include path says where it is)"
      fails=$((fails+1)); continue
    fi
    [[ -v home[$h] ]] || continue          # system and third-party headers
    to=${home[$h]}
    checked=$((checked+1))
    [[ $to == "$d" ]] && continue
    if [[ $to == kernel && $h != jiti.h && $h != jiti_world.h && $h != jiti_limits.h ]]; then
      echo "FAIL $f includes $h: outside kernel/ only jiti.h, jiti_world.h and jiti_limits.h"
      fails=$((fails+1)); continue
    fi
    if [[ $to == worker && $h != wire.h && $h != txn.h ]]; then
      echo "FAIL $f includes $h: outside worker/ only wire.h (the frames) and txn.h (the transaction engine)"
      fails=$((fails+1)); continue
    fi
    if [[ " ${may[$d]} " != *" $to "* ]]; then
      echo "FAIL $f includes $h ($to/): $d/ may include only: ${may[$d]:-nothing}"
      fails=$((fails+1))
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\("[^"]*"\).*/\1/p' "$f")
done
echo "$checked includes checked, $fails not allowed"

# every source is in its list (a file a merge brings in is not forgotten)
missing=0
for f in kernel/*.c kernel/lisp/*.lisp; do
  grep -qw "$(basename "$f")" CMakeLists.txt || { echo "FAIL $f is not in CMakeLists.txt's lists"; missing=$((missing+1)); }
done
for f in worker/*.c store/*.c json/*.c; do
  d=$(dirname "$f")
  grep -qw "$(basename "$f")" "$d/CMakeLists.txt" ||
    { echo "FAIL $f is not in $d/CMakeLists.txt's list"; missing=$((missing+1)); }
done
for f in controller/*/*.c; do
  d=$(dirname "$f")
  if [[ -f $d/CMakeLists.txt ]]; then  # a folder with a CMakeLists of its own lists its sources there
    grep -qw "$(basename "$f")" "$d/CMakeLists.txt" ||
      { echo "FAIL $f is not in $d/CMakeLists.txt's list"; missing=$((missing+1)); }
  else
    grep -qw "$(basename "$f")" controller/CMakeLists.txt ||
      { echo "FAIL $f is not in controller/CMakeLists.txt's lists"; missing=$((missing+1)); }
  fi
done
echo "$missing sources missing from the CMake lists"
[[ $fails == 0 && $missing == 0 ]]
