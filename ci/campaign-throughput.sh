#!/usr/bin/env bash
# The campaign loop's cases/s, two shardfuzz binaries side by side in one run (a redesign of the
# loop is held to "unchanged within noise"): each runs the same strict campaign (one job, isolated
# cases, --keep-going, the same seed and case count) ROUNDS times, alternating, and the script
# prints each run's cases/s and each binary's median.
# JOBS=1 (the default here) measures one job's loop; the campaign's own default is one job per core,
# where rank threads that a schedule runs one at a time lose nothing to the other jobs.
# Usage: ci/campaign-throughput.sh BEFORE_BIN AFTER_BIN [CASES=150] [ROUNDS=3] [SEED=1] [JOBS=1]
set -euo pipefail
before="$1"; after="$2"; cases="${3:-150}"; rounds="${4:-3}"; seed="${5:-1}"; jobs="${6:-1}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
run() {  # BIN LABEL ROUND -> prints "LABEL cases/s"
  local out="$work/$2-$3" start end
  start=$(date +%s.%N)
  OPENBLAS_NUM_THREADS=1 "$1" fuzz --profile strict --seed "$seed" --cases "$cases" --jobs "$jobs" --keep-going \
    --out "$out" > "$work/$2-$3.log" 2>&1 || true
  end=$(date +%s.%N)
  python3 -c "print('$2', round($cases / ($end - $start), 2))"
}
for r in $(seq 1 "$rounds"); do
  run "$before" before "$r"
  run "$after" after "$r"
done | tee "$work/rates"
python3 - "$work/rates" <<'PY'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    label, rate = line.split()
    rates.setdefault(label, []).append(float(rate))
for label, r in rates.items():
    print(f"{label}: median {statistics.median(r):.2f} cases/s over {len(r)} runs ({', '.join(map(str, r))})")
PY
