#!/usr/bin/env bash
# readme.sh — the README's examples run as written, in order, in a fresh
# directory: every command of the sh blocks of its section "Using it" must
# exit 0, and print the text shown after "#=>" (on its line or the next).
# Usage: bash tests/readme.sh path/to/jiti [README]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
JITI=$(realpath "$1")
README=$(realpath "${2:-$(dirname "${BASH_SOURCE[0]}")/../README.md}")
tmp=$(mktemp -d)
cleanup() { [[ -e $tmp/app.jiti/kernel.pid ]] && "$JITI" stop --store "$tmp/app.jiti" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/build" && ln -s "$JITI" "$tmp/build/jiti"
cd "$tmp" || exit 2

# The commands, one a line: "CMD<TAB>EXPECTED" (EXPECTED may be empty).
awk '
  /^## /    { using = ($0 == "## Using it"); next }
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

count=$(wc -l < commands.txt)
ok readme-has-examples "$([[ $count -ge 20 ]]; echo $?)"
i=0
while IFS=$'\t' read -r cmd want; do
  i=$((i+1))
  if [[ $cmd =~ ^[A-Za-z_]+= ]]; then   # an assignment the next commands use
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
