#!/usr/bin/env bash
# Mutation testing of the oracles (issue 23, item 5; docs/mutants.md): every ci/mutants/*.patch is a
# small, realistic defect of runtime/. The job copies the working tree's files (tracked and
# untracked-but-not-ignored: what a fresh clone plus your edits holds) to a scratch folder, builds
# `shardfuzz` there with the copied tree's own ci/build.sh (same flags, ccache hits through its
# CCACHE_BASEDIR), checks that the unmutated build's campaign has no finding, then for each patch:
# applies it, rebuilds, runs
#   shardfuzz fuzz --profile strict --time T --seed S --shrink-seconds K --out OUT/findings/NAME
# and records caught (exit 1, with the property that failed and the case it failed at), missed
# (exit 0) or broken (does not apply, does not build, any other exit), and reverts it. Prints a
# table and the score (caught / total), and writes them as markdown to OUT/report.md.
# Nothing of the checkout is touched: no build/ of it, no file of its working tree.
#
# Usage: ci/mutants.sh [--time 90s] [--seed 1] [--shrink-seconds 10] [--only NAME[,NAME...]]
#                      [--keep DIR] [--out DIR]
#   --keep DIR  build in DIR (kept afterwards; a later run reuses its build folder) instead of a
#               temporary folder removed at the end
#   --out DIR   logs, findings and report.md (default /tmp/shardfuzz-mutants)
# Exit: 0 when the job ran (the score is information, not a gate); 1 when the unmutated build's
# campaign has a finding (a false finding of the oracles: no mutant can be judged); 2 when the job
# itself could not run (usage, copy, the unmutated build).
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

TIME=90s
SEED=1
SHRINK_SECONDS=10
ONLY=""
KEEP=""
OUT=/tmp/shardfuzz-mutants
usage() { sed -n '14,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (( $# > 0 )); do
  case "$1" in
    --time) TIME="${2:?--time needs a value}"; shift 2 ;;
    --seed) SEED="${2:?--seed needs a value}"; shift 2 ;;
    --shrink-seconds) SHRINK_SECONDS="${2:?--shrink-seconds needs a value}"; shift 2 ;;
    --only) ONLY="${2:?--only needs a value}"; shift 2 ;;
    --keep) KEEP="${2:?--keep needs a folder}"; shift 2 ;;
    --out) OUT="${2:?--out needs a folder}"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "mutants.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

# The campaign's length in seconds (90s, 2m, 1h, 90), for the wall-clock guard around it.
seconds_of() {
  local v="$1"
  case "$v" in
    *s) echo "${v%s}" ;;
    *m) echo $(( ${v%m} * 60 )) ;;
    *h) echo $(( ${v%h} * 3600 )) ;;
    *) echo "$v" ;;
  esac
}
TIME_S="$(seconds_of "$TIME")"
[[ "$TIME_S" =~ ^[0-9]+$ ]] || { echo "mutants.sh: --time '$TIME' is not N, Ns, Nm or Nh" >&2; exit 2; }
# Generous: shrinking, blame and the HTML report come after the campaign's own time.
GUARD_S=$(( TIME_S + SHRINK_SECONDS + 600 ))

git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 || { echo "mutants.sh: $REPO is not a git checkout" >&2; exit 2; }
shopt -s nullglob
patches=("$REPO"/ci/mutants/*.patch)
shopt -u nullglob
if [[ -n "$ONLY" ]]; then
  selected=()
  IFS=',' read -r -a wanted <<<"$ONLY"
  for w in "${wanted[@]}"; do
    w="${w%.patch}"
    [[ -f "$REPO/ci/mutants/$w.patch" ]] || { echo "mutants.sh: no ci/mutants/$w.patch" >&2; exit 2; }
    selected+=("$REPO/ci/mutants/$w.patch")
  done
  patches=("${selected[@]}")
fi
(( ${#patches[@]} > 0 )) || { echo "mutants.sh: no patches in ci/mutants/" >&2; exit 2; }

if [[ -n "$KEEP" ]]; then
  mkdir -p "$KEEP"
  WORK="$(cd "$KEEP" && pwd -P)"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/shardfuzz-mutants.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
fi
case "$WORK/" in "$REPO"/*) echo "mutants.sh: the scratch folder must be outside $REPO" >&2; exit 2 ;; esac
SRC="$WORK/src"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd -P)"
rm -rf "$OUT/logs" "$OUT/findings" "$OUT/report.md"
mkdir -p "$OUT/logs" "$OUT/findings"
started=$(date +%s)

# --- the scratch copy ------------------------------------------------------------------------------
# The files land in a staging folder first, and only those whose content differs from the copy's
# are copied over, with a new time: tar restores the checkout's times, older than a kept build
# folder's objects, and ninja (which judges by time) would then keep a mutant's objects of the
# last run for the reverted file.
log "copy the working tree of $REPO to $SRC"
INCOMING="$WORK/incoming"
rm -rf "$INCOMING"
mkdir -p "$INCOMING" "$SRC"
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
  | (cd "$REPO" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) \
  | tar -xf - -C "$INCOMING"
rm -rf "$SRC/.git"
(cd "$SRC" && find . \( -path ./build -o -path ./.git \) -prune -o ! -type d -print0) \
  | while IFS= read -r -d '' f; do [[ -e "$INCOMING/$f" || -L "$INCOMING/$f" ]] || rm -f "$SRC/$f"; done
(cd "$INCOMING" && find . ! -type d -print0) | while IFS= read -r -d '' f; do
  cmp -s "$INCOMING/$f" "$SRC/$f" && continue
  mkdir -p "$(dirname "$SRC/$f")"
  rm -f "$SRC/$f"
  cp -P "$INCOMING/$f" "$SRC/$f"
done
rm -rf "$INCOMING"
# A repository of its own, so that reverting a mutant is `git checkout` whatever the patch did.
git -C "$SRC" init -q
git -C "$SRC" add -A
git -C "$SRC" -c user.name=mutants -c user.email=mutants@localhost -c commit.gpgsign=false \
  commit -q --no-verify -m "unmutated working tree of $REPO"

# The copied tree's own build script: same flags, its own build/, CCACHE_BASEDIR at the copy.
build() {
  (cd "$SRC" && env -u SHARDFUZZ_BUILD_DIR -u SHARDFUZZ_CMAKE_ARGS -u CCACHE_BASEDIR bash ci/build.sh shardfuzz)
}

# Runs the campaign; sets RC and LOG.
campaign() {
  local name="$1"
  LOG="$OUT/logs/$name.fuzz.log"
  rm -rf "$OUT/findings/$name"
  set +e
  (cd "$SRC" && timeout --kill-after=30 "$GUARD_S" ./build/shardfuzz fuzz --profile strict --time "$TIME" \
     --seed "$SEED" --shrink-seconds "$SHRINK_SECONDS" --out "$OUT/findings/$name") >"$LOG" 2>&1
  RC=$?
  set -e
}

# From a campaign's log: the property of its first finding, the case it failed at, when.
# One job prints "fuzz: case K (seed S, size Z) fails P: ..."; a --jobs campaign's summary
# "fuzz: case K fails P: ..." (its shards' own logs, OUT/jobs/I/fuzz.log, say when).
first_property() { sed -n 's/^fuzz: case [0-9]*\( (seed [0-9]*, size [0-9]*)\)\{0,1\} fails \([a-z0-9_]*\): .*/\2/p' "$1" | head -1; }
first_case() { sed -n 's/^fuzz: case \([0-9]*\)\( (seed [0-9]*, size [0-9]*)\)\{0,1\} fails .*/\1/p' "$1" | head -1; }
found_at() {
  local at
  at=$(cat "$1" "$(dirname "$1")/../findings/$(basename "$1" .fuzz.log)"/jobs/*/fuzz.log 2>/dev/null |
       sed -n 's/.*; found at \([0-9]*\) s, shrunk by.*/\1/p' | sort -n | head -1)
  echo "${at:-?}"
}
cases_run() { sed -n 's/^fuzz: \([0-9]*\) cases in .*/\1/p' "$1" | tail -1; }
header_field() { sed -n "/^\(---\|diff \)/q; s/^$2: //p" "$1" | head -1; }

log "build the unmutated shardfuzz"
if ! build >"$OUT/logs/unmutated.build.log" 2>&1; then
  tail -20 "$OUT/logs/unmutated.build.log" >&2
  echo "mutants.sh: the unmutated tree does not build (log: $OUT/logs/unmutated.build.log)" >&2
  exit 2
fi
log "unmutated: fuzz --profile strict --time $TIME --seed $SEED"
campaign unmutated
if (( RC == 1 )); then
  grep -a -E "^fuzz: (case|wrote|minimal case)" "$LOG" >&2 || true
  echo "mutants.sh: the unmutated build has a finding: the oracles report a false finding, no mutant can be judged" \
       "(log: $LOG)" >&2
  exit 1
elif (( RC != 0 )); then
  tail -20 "$LOG" >&2
  echo "mutants.sh: the unmutated campaign exited $RC (log: $LOG)" >&2
  exit 2
fi
baseline_cases="$(cases_run "$LOG")"
log "unmutated: 0 findings in ${baseline_cases:-?} cases"

# --- the mutants -----------------------------------------------------------------------------------
rows=()
caught=0 missed=0 broken=0
for patch in "${patches[@]}"; do
  name="$(basename "$patch" .patch)"
  component="$(header_field "$patch" Component)"
  component="${component%% (*}"
  t0=$(date +%s)
  verdict="" property="-" first="-"
  log "$name: apply"
  if ! (cd "$SRC" && git apply "$patch" 2>"$OUT/logs/$name.apply.log" \
        || patch -p1 --forward --batch <"$patch" >>"$OUT/logs/$name.apply.log" 2>&1); then
    verdict=broken first="does not apply"
  else
    log "$name: build"
    if ! build >"$OUT/logs/$name.build.log" 2>&1; then
      verdict=broken first="does not build"
    else
      log "$name: fuzz"
      campaign "$name"
      if (( RC == 0 )); then
        verdict=missed first="0 findings in $(cases_run "$LOG") cases"
      elif (( RC == 1 )) && [[ -n "$(first_property "$LOG")" ]]; then
        verdict=caught property="$(first_property "$LOG")"
        first="case $(first_case "$LOG"), $(found_at "$LOG") s"
      else
        verdict=broken first="fuzz exited $RC"
        (( RC == 124 || RC == 137 )) && first="fuzz ran past ${GUARD_S} s"
      fi
    fi
  fi
  (cd "$SRC" && git checkout -q -- . && git clean -fdq -e /build/)
  case "$verdict" in caught) caught=$((caught + 1)) ;; missed) missed=$((missed + 1)) ;; *) broken=$((broken + 1)) ;; esac
  secs=$(( $(date +%s) - t0 ))
  rows+=("| \`$name\` | $component | **$verdict** | $property | $first | $secs |")
  log "$name: $verdict ${property/#-/} ($first; ${secs} s)"
done

total=${#patches[@]}
wall=$(( $(date +%s) - started ))
{
  echo "## Mutation score: $caught / $total caught"
  echo
  echo "\`ci/mutants.sh --time $TIME --seed $SEED --shrink-seconds $SHRINK_SECONDS\`, $(date -u +%F), $(nproc) cores;" \
       "the unmutated build: 0 findings in ${baseline_cases:-?} cases. Missed $missed, broken $broken;" \
       "the whole job took $(( wall / 60 )) min $(( wall % 60 )) s."
  echo
  echo "| mutant | component | verdict | caught by | first finding | s (build + fuzz) |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$OUT/report.md"
echo
cat "$OUT/report.md"
echo
log "report: $OUT/report.md; logs: $OUT/logs; findings: $OUT/findings"
exit 0
