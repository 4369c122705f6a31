#!/usr/bin/env bash
# readme.sh — a document's examples run as written, in order, in a fresh
# directory: every command of the sh blocks of the sections it names must
# exit 0, and print the text shown after "#=>" (on its line or the next).
# The README's sections "Using it" and "Model sessions" by default; the
# guide's are named by tests/CMakeLists.txt.  A line "export NAME=..." is
# kept for the commands after it, as an assignment is.  The directory has
# build/jiti (also on PATH) and examples/ (the source tree's).
# Usage: bash tests/readme.sh path/to/jiti [DOCUMENT [SECTIONS]]
#   SECTIONS: an extended regular expression the "## " title of a section
#   must match for its blocks to run ("" stands for the text before the
#   first title).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
JITI=$(realpath "$1")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
README=$(realpath "${2:-$ROOT/README.md}")
SECTIONS=${3:-'^(Using it|Model sessions)$'}
tmp=$(mktemp -d)
cleanup() {
  local k
  for k in "$tmp"/*/kernel.pid; do [[ -e $k ]] && "$JITI" stop --store "$(dirname "$k")" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/build" && ln -s "$JITI" "$tmp/build/jiti" && ln -s "$ROOT/examples" "$tmp/examples"
export PATH=$tmp/build:$PATH
unset JITI_STORE OPENAI_API_KEY OPENAI_API_KEY_FILE OPENAI_BASE_URL
cd "$tmp" || exit 2

# The commands, one a line: "CMD<TAB>EXPECTED" (EXPECTED may be empty).
awk -v re="$SECTIONS" '
  BEGIN     { using = ("" ~ re) }
  /^## /    { using = (substr($0, 4) ~ re); next }
  /^```sh$/ { inblock = using; next }
  /^```$/   { if (inblock && n) flush(); inblock = 0; next }
  !inblock  { next }
  /^ *#=>/  { sub(/^ *#=> */, ""); want[n] = $0; next }
  /^ *$/    { next }
  { line = $0; w = ""
    if (match(line, / +#=> /)) { w = substr(line, RSTART + RLENGTH); line = substr(line, 1, RSTART - 1) }
    else if (match(line, /  +# /)) line = substr(line, 1, RSTART - 1)
    cmd[++n] = line; want[n] = w }
  function flush(   i) { for (i = 1; i <= n; i++) print cmd[i] "\t" want[i]; n = 0 }
' "$README" > commands.txt

# The README lists every example, and the suite runs each one (a smoke
# test: examples/CMakeLists.txt, or the session tests for sales-tax/).
if [[ $README == "$ROOT/README.md" ]]; then
  for e in "$ROOT"/examples/*; do
    name=${e##*/}
    [[ $name == CMakeLists.txt ]] && continue
    grep -q "examples/$name" "$README"; ok "readme-lists-example-$name" $?
    grep -rqs -- "$name" "$ROOT/examples/CMakeLists.txt" "$ROOT/tests/session/"; ok "example-tested-$name" $?
  done
fi

count=$(wc -l < commands.txt)
ok readme-has-examples "$([[ $count -ge 20 ]]; echo $?)"
i=0
while IFS=$'\t' read -r cmd want; do
  i=$((i+1))
  if [[ $cmd =~ ^(export\ )?[A-Za-z_]+= ]]; then   # an assignment the next commands use
    eval "$cmd"; ok "readme-$i: $cmd" $?
    continue
  fi
  out=$(eval "$cmd" 2>&1 < /dev/null); st=$?
  if [[ $st -ne 0 ]]; then
    fail=$((fail+1)); echo "FAIL readme-$i: exit $st: $cmd"; echo "${out:0:800}"
  elif [[ -n $want && $out != *"$want"* ]]; then
    fail=$((fail+1)); echo "FAIL readme-$i: no '$want' in the output of: $cmd"; echo "${out:0:800}"
  else
    pass=$((pass+1))
  fi
done < commands.txt
finish
