#!/usr/bin/env bash
# The repair benchmark (README.md beside this file): how often automatic
# repairs are right.  For each case of bench/repair/cases/, a fresh store
# and kernel: the application loaded, its invariants added, repair enabled
# for its function, the traffic calls made, the failing call made (it opens
# an incident), then `jiti supervise --until-idle` with the model; the
# incident read back (status, exchanges, verifications), and the case's
# hidden oracle run against the live world.  Prints one line per case and
# the summary: incidents, repaired, passed the checks, correct against the
# oracle, time from failure to applied repair, tokens and cost per incident.
#
#   bash bench/repair/run.sh                          # every case, the scripted model
#   bash bench/repair/run.sh --model gpt-5-mini       # a real model (OPENAI_API_KEY)
#   OPENAI_BASE_URL=http://localhost:11434/v1 bash bench/repair/run.sh --chat --model qwen2.5-coder
#   bash bench/repair/run.sh --cases 04,13 --keep /tmp/rb   # some cases; keep their stores
#   bash bench/repair/run.sh --json                   # one JSON object: the cases and the summary
#   bash bench/repair/run.sh --check                  # scripted: exit 1 unless every case ends
#                                                     # as its "# bench:" lines say
#   bash bench/repair/run.sh --direct                 # no supervisor: each case's last scripted
#                                                     # verdict applied as it is (no checks)
#
# Options: --attempts N, --scope function|world (passed to jiti supervise);
# anything after -- is passed to jiti supervise too (--structured,
# --reasoning-effort high, ...).  Environment: JITI (default build/jiti),
# BENCH_PRICE_INPUT and BENCH_PRICE_OUTPUT (US dollars per million input
# and output tokens; without them the cost is n/a), BENCH_TIMEOUT (seconds
# one supervisor may take per case; default 60 scripted, 900 otherwise),
# and the model's: OPENAI_API_KEY (or OPENAI_API_KEY_FILE),
# OPENAI_BASE_URL, OPENAI_MODEL.
#
# Exit status: 0 the run completed (and with --check, every case ended as
# claimed); 1 a case could not be run or --check found a difference; 2
# usage; 77 nothing to measure: jiti has no supervise command, or (with
# --check) its kernel verified none of the scripted repairs.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
J=${JITI:-build/jiti}
mode=scripted model='' chat=0 cases='' json=0 check=0 keep='' attempts='' scope=''
extra=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=${2:?--model needs a model name}; [ "$mode" = direct ] || mode=model; shift 2 ;;
    --chat) chat=1; [ "$mode" = direct ] || mode=model; shift ;;
    --scripted) mode=scripted; shift ;;
    --direct) mode=direct; shift ;;
    --cases) cases=${2:?--cases needs a list such as 01,04,13}; shift 2 ;;
    --json) json=1; shift ;;
    --check) check=1; shift ;;
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    --attempts) attempts=${2:?--attempts needs a number}; shift 2 ;;
    --scope) scope=${2:?--scope needs function or world}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run.sh: unknown argument '$1' (--help lists the options)" >&2; exit 2 ;;
  esac
done
if [ "$check" = 1 ] && [ "$mode" = model ]; then
  echo "run.sh: --check compares with the scripted answers; it goes with the scripted model or --direct" >&2
  exit 2
fi
command -v jq >/dev/null || { echo "run.sh: jq is needed (apt-get install jq)" >&2; exit 1; }
[ -x "$J" ] || { echo "run.sh: no jiti at $J (build it, or set JITI)" >&2; exit 1; }
if [ "$mode" != direct ] && ! "$J" supervise --help >/dev/null 2>&1; then
  echo "run.sh: $J has no supervise command; nothing to measure (--direct runs the cases without it)" >&2
  exit 77
fi
timeout_s=${BENCH_TIMEOUT:-$([ "$mode" = model ] && echo 900 || echo 60)}
label=$mode
[ "$mode" = model ] && label=${model:-${OPENAI_MODEL:-gpt-5-mini}}$([ "$chat" = 1 ] && echo " (chat)")

if [ -n "$keep" ]; then work=$keep; mkdir -p "$work"; else work=$(mktemp -d /tmp/jiti-rbench.XXXXXX); fi
cleanup() {  # the kernels of the cases (each case stops its own; this is for an interrupted run)
  local p
  for p in "$work"/*/kernel.pid; do
    [ -f "$p" ] || continue
    "$J" stop --store "$(dirname "$p")" >/dev/null 2>&1 || kill -9 "$(cat "$p")" 2>/dev/null
  done
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The forms of a case file, each ending in a NUL: a form starts on a line
# that starts with "(" and goes on over the lines that do not (comment and
# blank lines between forms are dropped).  check-sbcl.lisp enforces it.
forms() {
  awk '/^\(/ { if (f != "") printf "%s%c", f, 0; f = $0; next }
       /^[[:space:]]*(;|$)/ { next }
       { f = f "\n" $0 }
       END { if (f != "") printf "%s%c", f, 0 }' "$1"
}

# The "# bench:" claims of a scripted file, in order, one a line.
claims() { sed -n 's/^# bench: *\([a-z-]*\).*/\1/p' "$1"; }

# The verdicts of a scripted file (its JSON lines), in order.
verdicts() { grep -v '^[[:space:]]*\(#\|$\)' "$1"; }

# The oracle as one form for the live world: each entry's printed value (or
# :ERROR) against the expected one, a line "right ..." or "wrong ...".
oracle_program() {
  printf '(let ((*print-pretty* nil) (*print-length* nil) (*print-level* nil))\n'
  printf '  (dolist (e (quote\n'
  sed 's/^/    /' "$1"
  printf '))\n    (let ((got (handler-case (prin1-to-string (eval (car e))) (error () :error))))\n'
  printf '      (flet ((shown (p) (if (eq p :error) "an error" p)))\n'
  printf '        (format t "~:[wrong~;right~] ~s => ~a~:[, expected ~a~;~*~]~%%"\n'
  printf '                (equal got (cdr e)) (car e) (shown got) (equal got (cdr e)) (shown (cdr e))))))\n'
  printf '  (values))\n'
}

now() { echo "${EPOCHREALTIME/,/.}"; }

# ------------------------------------------------------------ one case
# run_case DIR: runs it and prints its record (one JSON object).
run_case() {
  local dir=$1 name fn S
  name=$(basename "$dir")
  fn=$(tr -d ' \n\t' <"$dir/function")
  S=$work/$name
  rm -rf "$S"
  local problem='' incident=null status=none revision=null seconds=null log='[]' oracle_out='' sv_out=''
  step() { [ -z "$problem" ] || return 1; }
  fail_step() { [ -n "$problem" ] || problem=$1; }
  "$J" init --store "$S" >/dev/null 2>"$work/$name.err" || fail_step "jiti init failed: $(head -c 300 "$work/$name.err")"
  step && { "$J" kernel --detach --store "$S" >/dev/null 2>"$work/$name.err"; } ||
    fail_step "the kernel did not start: $(head -c 300 "$work/$name.err")"
  step && { "$J" apply "$dir/app.lisp" --summary "bench: $name" --store "$S" >/dev/null 2>"$work/$name.err" ||
    fail_step "app.lisp does not load: $(head -c 300 "$work/$name.err")"; }
  local i=0 form
  while IFS= read -r -d '' form; do
    i=$((i + 1))
    step && { "$J" invariant add "bench-invariant-$i" "$form" --store "$S" >/dev/null 2>"$work/$name.err" ||
      fail_step "invariant $i refused: $(head -c 300 "$work/$name.err")"; }
  done < <(forms "$dir/invariants.lisp")
  step && { "$J" repair enable "$fn" --store "$S" >/dev/null 2>"$work/$name.err" ||
    fail_step "repair enable $fn: $(head -c 300 "$work/$name.err")"; }
  while IFS= read -r -d '' form; do
    step && { "$J" eval --store "$S" "$form" >/dev/null 2>"$work/$name.err" ||
      fail_step "the traffic call $form failed: $(head -c 300 "$work/$name.err")"; }
  done < <(forms "$dir/traffic.lisp")
  local t0 t1 reply
  if step; then
    form=$(forms "$dir/failing.lisp" | tr -d '\0')
    t0=$(now)
    reply=$("$J" eval --json --store "$S" "$form" 2>/dev/null)
    incident=$(jq '.incident.id // null' <<<"$reply" 2>/dev/null || echo null)
    [ "$incident" != null ] || fail_step "the failing call opened no incident: $(head -c 300 <<<"$reply")"
  fi
  if step; then
    case $mode in
      direct)
        local last
        last=$(verdicts "$dir/scripted.jsonl" | tail -n 1)
        if [ "$(jq -r .type <<<"$last")" = repair ]; then
          if jq -r .source <<<"$last" | "$J" eval --store "$S" --file - >/dev/null 2>"$work/$name.err"; then
            status=applied; t1=$(now); seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
          else
            status=not-applied
          fi
        else
          status=declined-$(jq -r .type <<<"$last" | tr _ -)
        fi ;;
      *)
        local sv=("$J" supervise --store "$S" --until-idle)
        if [ "$mode" = scripted ]; then sv+=(--scripted "$dir/scripted.jsonl")
        else
          [ "$chat" = 1 ] && sv+=(--chat)
          [ -n "$model" ] && sv+=(--model "$model")
        fi
        [ -n "$attempts" ] && sv+=(--attempts "$attempts")
        [ -n "$scope" ] && sv+=(--scope "$scope")
        sv+=("${extra[@]}")
        sv_out=$(timeout -k 5 "$timeout_s" "${sv[@]}" 2>&1)
        local rc=$?
        t1=$(now)
        [ $rc -eq 0 ] || fail_step "jiti supervise exited with $rc: $(tail -c 300 <<<"$sv_out")"
        local shown
        shown=$("$J" incidents show "$incident" --json --store "$S" 2>/dev/null)
        status=$(jq -r '.status // "none"' <<<"$shown" 2>/dev/null || echo none)
        revision=$(jq '.revision // null' <<<"$shown" 2>/dev/null || echo null)
        log=$(jq -c '.log // []' <<<"$shown" 2>/dev/null || echo '[]')
        [ "$status" = repaired ] && seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') ;;
    esac
  fi
  # the oracle against the live world (a preview: it changes nothing)
  if [ -n "$(ls "$S/kernel.pid" 2>/dev/null)" ]; then
    oracle_out=$(oracle_program "$dir/oracle.lisp" | "$J" preview --json --store "$S" --file - 2>/dev/null |
                 jq -r '.output // ""' 2>/dev/null)
  fi
  "$J" stop --store "$S" >/dev/null 2>&1
  local kind=repair
  [ "$(claims "$dir/scripted.jsonl" | tail -n 1)" = expected ] && kind=expected
  jq -n --arg case "$name" --arg function "$fn" --arg kind "$kind" --arg status "$status" \
    --argjson incident "$incident" --argjson revision "$revision" --argjson seconds "$seconds" \
    --argjson log "$log" --arg oracle "$oracle_out" --arg problem "$problem" \
    --arg claims "$(claims "$dir/scripted.jsonl" | tr '\n' ' ')" --arg sv "$sv_out" \
    --arg pin "${BENCH_PRICE_INPUT:-}" --arg pout "${BENCH_PRICE_OUTPUT:-}" '
    def exchanges: [$log[] | select(.kind == "exchange") | .entry];
    def verifications: [$log[] | select(.kind == "verification") | .entry];
    ($oracle | split("\n") | map(select(startswith("right ") or startswith("wrong ")))) as $o
    | (exchanges | map(.usage.input_tokens // 0) | add // 0) as $tin
    | (exchanges | map(.usage.output_tokens // 0) | add // 0) as $tout
    | {case: $case, function: $function, kind: $kind,
       claims: ($claims | split(" ") | map(select(. != ""))),
       incident: $incident, status: $status, revision: $revision,
       verdicts: [exchanges[] | select(.verdict) | .verdict.type],
       verifications: [verifications[] | {passed, reason}],
       passed_checks: ([verifications[] | select(.passed == true)] | length > 0),
       oracle_right: ($o | map(select(startswith("right "))) | length),
       oracle_total: ($o | length),
       oracle_wrong: ($o | map(select(startswith("wrong ")) | .[6:])),
       seconds_to_repair: $seconds,
       tokens_in: $tin, tokens_out: $tout, tokens: (exchanges | map(.usage.total_tokens // 0) | add // 0),
       cost: (if $pin != "" and $pout != "" then ($tin * ($pin | tonumber) + $tout * ($pout | tonumber)) / 1e6
              else null end),
       supervisor: ($sv | split("\n") | map(select(. != ""))),
       problem: (if $problem == "" then null else $problem end)}
    | .applied = (.status == "repaired" or .status == "applied")
    | .correct = (.oracle_total > 0 and .oracle_right == .oracle_total and .problem == null and
                  (if .kind == "expected" then (.status == "declined-expected") else .applied end))'
}

# ------------------------------------------------------------ --check
# check_case DIR RECORD: what the scripted answers promise, against what
# happened: the final outcome, and each wrong answer rejected by the check
# its claim names (the supervisor's "rejected: REASON" lines, in order).
check_case() {
  local dir=$1 rec=$2
  jq -r --arg mode "$mode" '
    def pattern: {identical: "identical", invariant: "invariant", traffic: "recorded call", scope: "out of scope"}[.];
    . as $r
    | ($r.claims | last) as $final
    | ($r.claims | map(select(pattern))) as $wrong
    | [$r.supervisor[] | capture(": rejected: (?<why>.*)$").why
       | select(startswith("no repair passed verification") | not)] as $rejections
    | [ (if $r.problem then "could not run: \($r.problem)" else empty end),
        (if ($final == "correct" or $final == "passes-wrong") and ($r.applied | not)
         then "ends \($r.status), not repaired" else empty end),
        (if $final == "expected" and $r.status != "declined-expected"
         then "ends \($r.status), not declined-expected" else empty end),
        (if ($final == "correct" or $final == "expected") and $r.oracle_right != $r.oracle_total
         then "the oracle disagrees: \($r.oracle_wrong)" else empty end),
        (if $final == "passes-wrong" and $r.oracle_right == $r.oracle_total
         then "the oracle agrees: it was to be wrong" else empty end),
        (if $mode == "direct" then empty
         else
           (if ($rejections | length) != ($wrong | length)
            then "\($rejections | length) candidates rejected (\($rejections)), \($wrong | length) to be (\($wrong))"
            else empty end),
           ([range(0; [$wrong | length, ($rejections | length)] | min)] | .[] as $i
            | if ($rejections[$i] | contains($wrong[$i] | pattern)) then empty
              else "candidate \($i + 1) rejected for \"\($rejections[$i])\", not \($wrong[$i])" end),
           (if ($final == "correct" or $final == "passes-wrong") and ($r.passed_checks | not)
            then "no candidate passed verification" else empty end)
         end) ]
    | .[] | "\($r.case): \(.)"' <<<"$rec"
}

# ------------------------------------------------------------ the run
dirs=()
for d in "$here"/cases/*/; do
  d=${d%/}
  if [ -n "$cases" ]; then
    n=$(basename "$d"); n=${n%%-*}
    [[ ",$cases," == *",$n,"* || ",$cases," == *",$(basename "$d"),"* ]] || continue
  fi
  dirs+=("$d")
done
[ ${#dirs[@]} -gt 0 ] || { echo "run.sh: no case matches --cases $cases" >&2; exit 2; }

records=() mismatches=() problems=0
[ "$json" = 1 ] || printf '%-26s %-16s %-32s %-7s %-7s %-8s %8s %8s\n' \
  case function status checks oracle correct seconds tokens
for d in "${dirs[@]}"; do
  rec=$(run_case "$d")
  records+=("$rec")
  [ "$(jq -r '.problem // empty' <<<"$rec")" = "" ] || problems=$((problems + 1))
  if [ "$json" != 1 ]; then
    jq -r '[.case, .function, (.status + (if .verdicts | length > 1 then " (\(.verdicts | length) verdicts)" else "" end)),
            (if (.verifications | length) == 0 then "-" elif .passed_checks then "pass" else "fail" end),
            "\(.oracle_right)/\(.oracle_total)", (if .correct then "yes" else "no" end),
            (if .seconds_to_repair then (.seconds_to_repair | tostring) else "-" end), (.tokens | tostring)]
           | "\(.[0] | .[0:26] | . + " " * (26 - length)) \(.[1] | .[0:16] | . + " " * (16 - length)) \(.[2] | . + " " * ([32 - length, 0] | max)) \(.[3] | . + " " * (7 - length)) \(.[4] | . + " " * (7 - length)) \(.[5] | . + " " * (8 - length)) \(.[6] | " " * ([8 - length, 0] | max) + .) \(.[7] | " " * ([8 - length, 0] | max) + .)"' <<<"$rec"
    jq -r 'if .problem then "    problem: \(.problem)" else empty end,
           (.oracle_wrong[] | "    oracle: \(.)")' <<<"$rec"
  fi
  if [ "$check" = 1 ]; then
    while IFS= read -r m; do [ -n "$m" ] && mismatches+=("$m"); done < <(check_case "$d" "$rec")
  fi
done

summary=$(printf '%s\n' "${records[@]}" | jq -s --arg model "$label" '
  def pct(p): if length == 0 then null
              else sort | .[([((p * length) | ceil) - 1, 0] | max)] end;
  def share(a; b): if b == 0 then null else (a / b * 1000 | round / 10) end;
  . as $cs
  | [$cs[] | select(.incident != null)] as $inc
  | [$cs[] | select(.kind == "repair")] as $rep
  | [$cs[] | select(.kind == "expected")] as $exp
  | [$cs[] | select(.applied)] as $applied
  | [$cs[] | .seconds_to_repair | select(. != null)] as $secs
  | {model: $model,
     cases: ($cs | length), repair_cases: ($rep | length), expected_cases: ($exp | length),
     incidents: ($inc | length),
     repaired: ($applied | length),
     passed_checks: ([$cs[] | select(.passed_checks)] | length),
     correct: ([$cs[] | select(.correct)] | length),
     correct_repairs: ([$rep[] | select(.correct)] | length),
     applied_but_wrong: ([$applied[] | select(.correct | not)] | length),
     correct_declines: ([$exp[] | select(.correct)] | length),
     rejected_candidates: ([$cs[].verifications[] | select(.passed | not)] | length),
     precision_pct: share([$applied[] | select(.correct)] | length; $applied | length),
     seconds_p50: ($secs | pct(0.5)), seconds_p95: ($secs | pct(0.95)),
     tokens_per_incident: (if ($inc | length) == 0 then null else (([$inc[].tokens] | add) / ($inc | length) | round) end),
     cost_per_incident: (if ($inc | length) == 0 or ([$inc[] | .cost == null] | any) then null
                         else (([$inc[].cost] | add) / ($inc | length)) end),
     not_run: ([$cs[] | select(.problem)] | length)}')

if [ "$json" = 1 ]; then
  printf '%s\n' "${records[@]}" | jq -s --argjson summary "$summary" '{summary: $summary, cases: .}'
else
  jq -r '
    "",
    "model: \(.model)",
    "cases: \(.cases) (\(.repair_cases) to repair, \(.expected_cases) where the error is intended); incidents opened: \(.incidents)",
    "repaired (a repair applied): \(.repaired); repairs that passed the checks: \(.passed_checks); candidates rejected by the checks: \(.rejected_candidates)",
    "correct against the oracle: \(.correct) of \(.cases) (\(.correct_repairs) of \(.repair_cases) repairs, \(.correct_declines) of \(.expected_cases) declines); applied but wrong: \(.applied_but_wrong)",
    "precision (correct / applied): \(if .precision_pct == null then "n/a" else "\(.precision_pct)%" end)",
    "failure to applied repair: p50 \(.seconds_p50 // "n/a") s, p95 \(.seconds_p95 // "n/a") s",
    "tokens per incident: \(.tokens_per_incident // "n/a"); cost per incident: \(if .cost_per_incident == null then "n/a" else "$\(.cost_per_incident * 10000 | round / 10000)" end)",
    (if .not_run > 0 then "cases that could not be run: \(.not_run)" else empty end)' <<<"$summary"
fi
status=0
[ "$problems" -eq 0 ] || status=1
if [ "$check" = 1 ]; then
  # A kernel that verified no candidate at all (every repair request refused
  # before a verification) cannot be benchmarked: a skip, not a result.
  unverified=$(printf '%s\n' "${records[@]}" | jq -s '
    ([.[].verifications | length] | add) == 0 and ([.[].verdicts[] | select(. == "repair")] | length) > 0')
  if [ "$mode" = scripted ] && [ "$unverified" = true ]; then
    why=$(printf '%s\n' "${records[@]}" | jq -rs '[.[].supervisor[] | select(test(": not applied: "))] | first // ""')
    echo "check: skipped: the kernel verified none of the scripted repairs${why:+ (jiti supervise: $why)}" >&2
    exit 77
  fi
  if [ ${#mismatches[@]} -gt 0 ]; then
    printf 'check: %s\n' "${mismatches[@]}" >&2
    status=1
  else
    echo "check: every case ended as its scripted answers say" >&2
  fi
fi
exit $status
