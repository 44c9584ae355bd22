#!/usr/bin/env bash
# Generated cases per second with --jobs on 2, 4, 8, ... cores (issue 24), each campaign pinned
# with taskset to its first C cores of this host, --jobs C, the same seed and length:
#   taskset -c 0-(C-1) shardfuzz fuzz --profile strict --time T --seed S --keep-going --jobs C
# and the rate relative to linear from the smallest count: (rate_C / rate_2) / (C / 2). Two rates:
#   cases/s  the whole command's (start-up of C shards and their workers included);
#   steady/s between the campaign's first progress line with a case and its last (lines every 5 s,
#            their "s left" whole seconds: use TIME >= 30s), what a long nightly campaign runs at.
# Usage: ci/jobs-scaling.sh [TIME=30s] [CORES="2 4 8 16"] [BIN=build/shardfuzz] [SEED=1]
#   SCALING_JOBS_PER_CORE=0.5 runs half as many jobs as cores; SCALING_OUT=DIR keeps the logs.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

TIME="${1:-30s}"
CORES="${2:-2 4 8 16}"
BIN="${3:-build/shardfuzz}"
SEED="${4:-1}"
if [[ -n "${SCALING_OUT:-}" ]]; then
  out="$SCALING_OUT"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
per_core="${SCALING_JOBS_PER_CORE:-1}"
available=$(nproc)
base_rate=""
base_steady=""
base_cores=""
# of_linear RATE BASE C: RATE at C cores over BASE at base_cores, relative to linear ("-" when either is unknown).
of_linear() {
  awk -v r="$1" -v b="$2" -v c="$3" -v bc="$base_cores" \
    'BEGIN {if (r == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", (r / b) / (c / bc)}'
}
printf '%-6s %-5s %-8s %-8s %-10s %-10s %-10s %-10s %s\n' cores jobs cases seconds cases/s "of linear" steady/s \
  "of linear" findings
for c in $CORES; do
  if (( c > available )); then
    echo "$c cores: this host has $available; skipped"
    continue
  fi
  jobs=$(awk -v c="$c" -v f="$per_core" 'BEGIN {j = int(c * f + 0.5); print j < 1 ? 1 : j}')
  taskset -c "0-$((c - 1))" "$BIN" fuzz --profile strict --time "$TIME" --seed "$SEED" --keep-going --jobs "$jobs" \
    --out "$out/$c" > "$out/$c.log" 2>&1 || true
  line=$(grep -E "^fuzz: [0-9]+ cases in [0-9]+ s" "$out/$c.log" | tail -1 || true)
  cases=$(sed -E 's/^fuzz: ([0-9]+) cases in ([0-9]+) s.*/\1/' <<<"$line")
  secs=$(sed -E 's/^fuzz: ([0-9]+) cases in ([0-9]+) s.*/\2/' <<<"$line")
  if [[ -z "$line" ]]; then
    echo "$c cores: no summary line; log:"; tail -5 "$out/$c.log"; continue
  fi
  rate=$(awk -v n="$cases" -v s="$secs" 'BEGIN {printf "%.1f", n / s}')
  # "fuzz: N cases, R/s, F finding(s), L s left; ..." -> "N L" for the lines after the first case
  steady=$(sed -nE 's/^fuzz: ([0-9]+) cases, [0-9.]+\/s, [0-9]+ finding\(s\), ([0-9]+) s left.*/\1 \2/p' "$out/$c.log" |
    awk '$1 > 0 {if (!n++) {c0 = $1; l0 = $2} c1 = $1; l1 = $2}
         END {if (n > 1 && l0 > l1) printf "%.1f", (c1 - c0) / (l0 - l1); else print "-"}')
  if [[ -z "$base_rate" ]]; then base_rate=$rate; base_steady=$steady; base_cores=$c; fi
  findings=$(sed -E 's/.* ([0-9]+) finding.*/\1/' <<<"$line")
  printf '%-6s %-5s %-8s %-8s %-10s %-10s %-10s %-10s %s\n' "$c" "$jobs" "$cases" "$secs" "$rate" \
    "$(of_linear "$rate" "$base_rate" "$c")" "$steady" "$(of_linear "$steady" "$base_steady" "$c")" "$findings"
done
