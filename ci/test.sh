#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole ctest suite (unit, property,
# conformance, end-to-end). Exits non-zero on any failure.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

bash ci/install-deps.sh
bash ci/build.sh

log "conformance traces: $SHARDFUZZ_CONFORMANCE_DIR"
log "ctest"
ctest --test-dir build --output-on-failure -j2 --timeout 600
