#!/usr/bin/env bash
# Does a finding replay exactly from its reproducer (issue 45, item 4)? Runs the reproducer N times
# as written (its scenario's schedule: one rank thread at a time, deterministic) and N times with
# --unscheduled (the OS's order, the wall clock), and prints for each: how many runs failed the
# reproducer's property, and how many distinct schedule fingerprints the scheduled runs had.
#
# Usage: ci/schedule-replay.sh REPRODUCER [--runs 20] [--binary build/shardfuzz] [--run-timeout 60]
# Exit: 0 when every scheduled run failed the reproducer's property with one fingerprint; 1 when
# not; 2 on usage errors.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
RUNS=20
RUN_TIMEOUT=60
BINARY="$REPO/build/shardfuzz"
FILE=""
while (( $# > 0 )); do
  case "$1" in
    --runs) RUNS="${2:?--runs needs a number}"; shift 2 ;;
    --binary) BINARY="${2:?--binary needs a path}"; shift 2 ;;
    --run-timeout) RUN_TIMEOUT="${2:?--run-timeout needs seconds}"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) [[ -z "$FILE" ]] || { echo "schedule-replay.sh: one reproducer only" >&2; exit 2; }; FILE="$1"; shift ;;
  esac
done
[[ -n "$FILE" && -f "$FILE" ]] || { echo "schedule-replay.sh: no reproducer file given (or not found): '$FILE'" >&2; exit 2; }
[[ -x "$BINARY" ]] || { echo "schedule-replay.sh: --binary $BINARY is not an executable" >&2; exit 2; }
# The property the reproducer fails under its own profile (else the first it fails at all).
PROPERTY="$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
expected = d.get("expected", {})
own = expected.get(d.get("scenario", {}).get("profile", ""), "pass")
print(own if own != "pass" else next((v for v in expected.values() if v != "pass"), ""))' "$FILE")"
[[ -n "$PROPERTY" ]] || { echo "schedule-replay.sh: $FILE names no failing property" >&2; exit 2; }

# One run: "FAILED <fingerprint>" when the property failed, "passed <fingerprint>" when not, "hung -"
# past --run-timeout seconds (an unscheduled run of a hang has no deadline to end it).
one_run() {
  local json
  json="$(timeout "$RUN_TIMEOUT" "$BINARY" run "$FILE" --json "$@" 2>/dev/null)" || [[ $? -ne 124 ]] || { echo "hung -"; return; }
  printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
failed = any(not v["ok"] and not v["skipped"] and v["property"] == sys.argv[1] for v in d.get("verdicts", []))
print(("FAILED" if failed else "passed"), d.get("schedule", {}).get("fingerprint", "-"))' "$PROPERTY" 2>/dev/null || echo "error -"
}

tally() {  # label, then run arguments
  local label="$1"; shift
  local failed=0 hung=0 fingerprints=""
  for ((i = 0; i < RUNS; i++)); do
    read -r verdict fp < <(one_run "$@")
    [[ "$verdict" == FAILED ]] && failed=$((failed + 1))
    [[ "$verdict" == hung ]] && hung=$((hung + 1))
    fingerprints+="$fp"$'\n'
  done
  local distinct
  distinct="$(printf '%s' "$fingerprints" | sort -u | grep -c . || true)"
  if [[ "$label" == scheduled ]]; then
    echo "$label: $PROPERTY failed in $failed of $RUNS runs; $distinct distinct schedule fingerprint(s)"
  else
    echo "$label: $PROPERTY failed in $failed of $RUNS runs, $hung hung past ${RUN_TIMEOUT} s (the OS's order: no fingerprint)"
  fi
  [[ "$label" != scheduled ]] || { SCHEDULED_FAILED=$failed; SCHEDULED_DISTINCT=$distinct; }
}

echo "reproducer: $FILE (property $PROPERTY), $RUNS runs each, binary $BINARY"
SCHEDULED_FAILED=0
SCHEDULED_DISTINCT=0
tally scheduled
tally unscheduled --unscheduled
(( SCHEDULED_FAILED == RUNS && SCHEDULED_DISTINCT == 1 ))
