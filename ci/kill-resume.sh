#!/usr/bin/env bash
# Kills a fuzz campaign with SIGKILL at random moments, resumes it each time with --resume, and
# checks it ends with exactly the findings of an uninterrupted run of the same campaign, every
# reproducer whole and replayable, no temporary file left. The figures of issue 7's acceptance.
#   ci/kill-resume.sh SHARDFUZZ OUT [KILLS] [CASES]
set -euo pipefail
bin=$(realpath "$1"); out=$2; kills=${3:-5}; cases=${4:-24}
rm -rf "$out"; mkdir -p "$out"
args=(--profile torch-2.9 --seed 5 --cases "$cases" --keep-going --shrink-steps 60)

t0=$(date +%s.%N)
"$bin" fuzz "${args[@]}" --out "$out/whole" > "$out/whole.log" 2>&1 || true
whole_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

"$bin" fuzz "${args[@]}" --out "$out/killed" > "$out/killed.log" 2>&1 &
pid=$!
for i in $(seq 1 "$kills"); do
  # A random moment within the campaign's expected length.
  sleep "$(awk -v s="$RANDOM" -v w="$whole_s" -v k="$kills" 'BEGIN { srand(s); printf "%.2f", 0.3 + rand() * w / k }')"
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid"; wait "$pid" 2>/dev/null || true
    next=$(python3 -c "import json;print(json.load(open('$out/killed/.campaign.json'))['next_case'])" 2>/dev/null || echo "?")
    echo "kill $i: SIGKILL at case $next"
  else
    wait "$pid" 2>/dev/null || true
    echo "kill $i: the campaign had already finished"
  fi
  "$bin" fuzz --resume "$out/killed" >> "$out/killed.log" 2>&1 &
  pid=$!
done
wait "$pid" || true

status=0
# The reproducers and reports; not the findings database (a killed writer may leave its -wal) nor
# the --jobs shards' folders.
reports() { (cd "$1" && ls | grep -v -e '^findings\.db' -e '^jobs$'); }
diff <(reports "$out/whole") <(reports "$out/killed") \
  || { echo "FAIL: the findings differ"; status=1; }
if ls "$out/killed" | grep -q '\.tmp\.'; then echo "FAIL: temporary files left"; status=1; fi
python3 - "$out/killed/.campaign.json" <<'PY' || status=1
import json, sys
s = json.load(open(sys.argv[1]))
assert s["finished"], "the resumed campaign did not finish"
print(f"resumed campaign: {s['next_case']} cases, {len(s['findings'])} findings, {s['sessions']} sessions")
PY
"$bin" replay "$out/killed" > "$out/replay.log" 2>&1 || { echo "FAIL: replay"; tail -5 "$out/replay.log"; status=1; }
echo "uninterrupted: $(reports "$out/whole" | wc -l) files of findings in ${whole_s%.*} s; replay: $(tail -1 "$out/replay.log")"
[ "$status" = 0 ] && echo "kill-resume: PASS" || echo "kill-resume: FAIL"
exit "$status"
