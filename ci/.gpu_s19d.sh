#!/usr/bin/env bash
# session 19, device call 4: the nightly after the device parity tolerance
set -uo pipefail
source .gpu-deps/env.sh
t0=$SECONDS
SHARDFUZZ_GPU_BUILD_DIR=build-gpu bash ci/nightly-gpu.sh $OUT/nightly; echo "== nightly (build included) rc=$? in $((SECONDS - t0)) s"
cat $OUT/nightly/fuzz-*.json | grep -E "message|cases\"" | head
rm -rf $OUT/nightly/*/.campaign.json $OUT/nightly/*.xml $OUT/nightly/build.log $OUT/nightly/replay.log
