#!/usr/bin/env bash
# Strict --faults campaigns over many seeds (issue 47's acceptance: 0 findings in >= 20,000 cases,
# seeds 1-20, worlds 1-8, every fault kind, on the unmodified runtime). Each seed runs CASES cases
# with --keep-going, PARALLEL seeds at a time (one job each), and the script prints each seed's
# cases, findings and the properties they failed, then the totals. Exit 1 if any seed found
# something or did not finish.
# Usage: ci/faults-sweep.sh [FIRST_SEED=1] [LAST_SEED=20] [CASES=1000] [PARALLEL=cores] [--binary B] [--out DIR]
set -euo pipefail
first="${1:-1}"; last="${2:-20}"; cases="${3:-1000}"; parallel="${4:-$(nproc)}"
shift $(( $# < 4 ? $# : 4 ))
binary="$(dirname "$0")/../build/shardfuzz"; out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "faults-sweep: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" ]] || { out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT; }
mkdir -p "$out"
run_seed() {  # SEED
  local dir="$out/seed-$1" rc=0
  OPENBLAS_NUM_THREADS=1 "$binary" fuzz --profile strict --faults --seed "$1" --cases "$cases" --jobs 1 \
    --keep-going --out "$dir" > "$dir.log" 2>&1 || rc=$?
  local ran findings
  ran=$(sed -n 's/^fuzz: \([0-9]*\) cases in .*/\1/p' "$dir.log" | tail -1)
  findings=$(sed -n 's/^fuzz: [0-9]* cases in .* \([0-9]*\) finding(s).*/\1/p' "$dir.log" | tail -1)
  echo "seed $1: ${ran:-?} cases, ${findings:-?} finding(s), exit $rc"
  grep -h "^fuzz: case [0-9]* fails" "$dir.log" | sed 's/^/  /' | cut -c1-400 || true
}
export -f run_seed
export out cases binary
seq "$first" "$last" | xargs -P "$parallel" -I{} bash -c 'run_seed {}' | tee "$out/summary"
python3 - "$out/summary" <<'PY'
import re, sys
cases = findings = seeds = bad = 0
for line in open(sys.argv[1]):
    m = re.match(r"seed \d+: (\S+) cases, (\S+) finding\(s\), exit (\d+)", line)
    if not m: continue
    seeds += 1
    if m.group(1) == "?" or m.group(2) == "?": bad += 1; continue
    cases += int(m.group(1)); findings += int(m.group(2))
print(f"total: {seeds} seeds, {cases} cases, {findings} finding(s), {bad} seed(s) without a summary")
sys.exit(1 if findings or bad else 0)
PY
