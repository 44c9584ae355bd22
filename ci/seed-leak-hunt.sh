#!/usr/bin/env bash
# The seed leak hunted as a user times it (issue 24): the whole command
#   shardfuzz fuzz --profile torch-2.9 --until-row 5 --seed S --time 60s
# for seeds 1..N, wall time from exec to exit (start-up, isolation, shrinking and reports
# included), and the median. Extra arguments go to every command (e.g. --jobs 16).
# Usage: ci/seed-leak-hunt.sh [SEEDS=10] [BIN=build/shardfuzz] [-- FUZZ ARGS...]
#   SHARDFUZZ_TASKSET="taskset -c 0-1" pins the commands to cores.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

SEEDS="${1:-10}"
BIN="${2:-build/shardfuzz}"
shift $(( $# > 2 ? 2 : $# ))
[[ "${1:-}" == "--" ]] && shift
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2206  # a command prefix, split on purpose
pin=(${SHARDFUZZ_TASKSET:-})
times=()
for s in $(seq 1 "$SEEDS"); do
  t0=$EPOCHREALTIME
  "${pin[@]}" "$BIN" fuzz --profile torch-2.9 --until-row 5 --seed "$s" --time 60s --out "$out/$s" "$@" \
    > "$out/$s.log" 2>&1 || true
  t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.3f", b - a}')
  found=$(grep -c "^fuzz: bug zoo: .*5\|zoo-" "$out/$s.log" || true)
  printf 'seed %2d: %6.2f s%s\n' "$s" "$t" "$( ((found)) || echo '  (row 5 not found)')"
  times+=("$t")
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2;
  printf "median over %d seeds: %.2f s\n", NR, m}'
