#!/usr/bin/env bash
# Generated cases per second with --jobs on 2, 4, 8, ... cores (issue 24), each campaign pinned
# with taskset to its first C cores of this host, --jobs C, the same seed and length:
#   taskset -c 0-(C-1) shardfuzz fuzz --profile strict --time T --seed S --keep-going --jobs C
# and the rate relative to linear from the smallest count: (rate_C / rate_2) / (C / 2).
# Usage: ci/jobs-scaling.sh [TIME=30s] [CORES="2 4 8 16"] [BIN=build/shardfuzz] [SEED=1]
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

TIME="${1:-30s}"
CORES="${2:-2 4 8 16}"
BIN="${3:-build/shardfuzz}"
SEED="${4:-1}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
available=$(nproc)
base_rate=""
base_cores=""
printf '%-6s %-8s %-10s %-10s %s\n' cores cases seconds cases/s "of linear"
for c in $CORES; do
  if (( c > available )); then
    echo "$c cores: this host has $available; skipped"
    continue
  fi
  taskset -c "0-$((c - 1))" "$BIN" fuzz --profile strict --time "$TIME" --seed "$SEED" --keep-going --jobs "$c" \
    --out "$out/$c" > "$out/$c.log" 2>&1 || true
  line=$(grep -E "^fuzz: [0-9]+ cases in [0-9]+ s" "$out/$c.log" | tail -1)
  cases=$(sed -E 's/^fuzz: ([0-9]+) cases in ([0-9]+) s.*/\1/' <<<"$line")
  secs=$(sed -E 's/^fuzz: ([0-9]+) cases in ([0-9]+) s.*/\2/' <<<"$line")
  if [[ -z "$line" ]]; then
    echo "$c cores: no summary line; log:"; tail -5 "$out/$c.log"; continue
  fi
  rate=$(awk -v n="$cases" -v s="$secs" 'BEGIN {printf "%.1f", n / s}')
  if [[ -z "$base_rate" ]]; then base_rate=$rate; base_cores=$c; fi
  ratio=$(awk -v r="$rate" -v b="$base_rate" -v c="$c" -v bc="$base_cores" 'BEGIN {printf "%.2f", (r / b) / (c / bc)}')
  printf '%-6s %-8s %-10s %-10s %s\n' "$c" "$cases" "$secs" "$rate" "$ratio"
done
