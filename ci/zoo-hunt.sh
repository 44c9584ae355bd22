#!/usr/bin/env bash
# Rediscovers every applicable bug-zoo row from random generation: for each row, runs
# `shardfuzz fuzz --profile P --until-row R --seed S --time LIMIT` for each seed and prints one
# line per run (row, seed, seconds to find, seconds to find + shrink, minimal size, reproducer),
# then the median per row. The figures of docs/bug-zoo.md come from here.
# Usage: ci/zoo-hunt.sh [SEEDS (default "1 2 3 4 5")] [LIMIT (default 300s)] [ROWS (default all)]
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

SEEDS="${1:-1 2 3 4 5}"
LIMIT="${2:-300s}"
# row:profile — the profile whose switch (or injected defect) reproduces the row.
ALL_ROWS="1:torch-2.9 2:torch-2.7 3:torch-2.7 4:strict+experts_skip_empty 5:torch-2.9 7:torch-2.11
10:strict+group_reference_cycle 13:strict+upcast_frozen_params 14:torch-2.11 S2:torch-2.11 S3:torch-2.11 S4:torch-2.11 S5:torch-2.11 S6:torch-2.11"
ROWS="${3:-$ALL_ROWS}"
OUT="${ZOO_HUNT_OUT:-zoo-hunt}"
mkdir -p "$OUT"

printf '%-4s %-5s %-10s %-10s %s\n' row seed find_s shrunk_s "minimal case / reproducer"
for entry in $ROWS; do
  row="${entry%%:*}"; profile="${entry#*:}"
  for seed in $SEEDS; do
    log_file="$OUT/row-$row-seed-$seed.log"
    ./build/shardfuzz fuzz --profile "$profile" --until-row "$row" --seed "$seed" --time "$LIMIT" \
      --out "$OUT/row-$row" >"$log_file" 2>&1 || true
    line="$(grep -a 'found at' "$log_file" | tail -1 || true)"
    if [[ -z "$line" ]]; then
      printf '%-4s %-5s %-10s %-10s %s\n' "$row" "$seed" "-" "-" "not found within $LIMIT"
      continue
    fi
    found="$(sed -n 's/.*found at \([0-9]*\) s.*/\1/p' <<<"$line")"
    shrunk="$(sed -n 's/.*shrunk by \([0-9]*\) s.*/\1/p' <<<"$line")"
    minimal="$(grep -a 'fuzz: minimal case:' "$log_file" | tail -1 | sed 's/fuzz: minimal case: //' || true)"
    printf '%-4s %-5s %-10s %-10s %s\n' "$row" "$seed" "$found" "$shrunk" "$minimal"
  done
done
