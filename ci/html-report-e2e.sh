#!/usr/bin/env bash
# End to end: the HTML report of the seed leak (torch-2.9) opened in headless Chromium. Checks that
# every rank's chart drew pixels and that the culprit the report names is marked on the plot (the
# page's own render check, read back from the DOM), and keeps a screenshot.
# Usage: ci/html-report-e2e.sh SHARDFUZZ CHROMIUM OUT   (ctest runs it; OUT gets report.html, report.png)
set -uo pipefail
SHARDFUZZ=${1:?usage: ci/html-report-e2e.sh SHARDFUZZ CHROMIUM OUT}
CHROMIUM=${2:?chromium}
OUT=${3:?out}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT"
"$SHARDFUZZ" run --profile torch-2.9 --html "$OUT/report.html" \
  "$ROOT/reproducers/seed-leak-gated-moe-nested-experts-ac.json" > "$OUT/run.log" 2>&1
[[ -s "$OUT/report.html" ]] || { echo "FAIL: no report written"; cat "$OUT/run.log"; exit 1; }
browser=("$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000)
timeout 120 "${browser[@]}" --dump-dom "file://$OUT/report.html" > "$OUT/dom.html" 2> "$OUT/chromium.log"
check=$(grep -o '<p id="render-check">[^<]*</p>' "$OUT/dom.html" | sed 's/<[^>]*>//g')
culprits=$(grep -o '<p id="culprit">.*</p>' "$OUT/report.html" | grep -o '<code>[^<]*</code>' | sed 's/<[^>]*>//g')
echo "render check: $check"
echo "culprits named: $culprits"
[[ $check =~ ^rendered\ ([0-9]+)\ of\ ([0-9]+)\ charts ]] || { echo "FAIL: the page did not render"; tail -5 "$OUT/chromium.log"; exit 1; }
(( BASH_REMATCH[1] == BASH_REMATCH[2] && BASH_REMATCH[2] > 0 )) || { echo "FAIL: not every chart drew"; exit 1; }
[[ -n $culprits ]] || { echo "FAIL: the report names no culprit for the seed leak"; exit 1; }
for c in $culprits; do
  [[ $check == *"culprit marked:"*"$c"* ]] || { echo "FAIL: culprit $c is not marked on the plot"; exit 1; }
done
timeout 120 "${browser[@]}" --window-size=1200,1600 --screenshot="$OUT/report.png" "file://$OUT/report.html" \
  >> "$OUT/chromium.log" 2>&1
size=$(stat -c %s "$OUT/report.png" 2>/dev/null || echo 0)
(( size > 10000 )) || { echo "FAIL: no screenshot"; exit 1; }
echo "PASS: screenshot $OUT/report.png ($size bytes)"
