#!/usr/bin/env bash
# Installs dependencies, builds the shardfuzz tool and runs it on the embedded default
# (threads backend on CPU). Exits with the tool's status: 0 clean, 1 findings, 2 could not run.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

bash ci/install-deps.sh
bash ci/build.sh shardfuzz

# The one place that says what "run the tool" means. Until `shardfuzz fuzz` exists this is the
# conformance replay of the recorded FSDP2 traces.
SHARDFUZZ_COMMAND=(./build/shardfuzz conform --traces "$SHARDFUZZ_CONFORMANCE_DIR")

log "${SHARDFUZZ_COMMAND[*]}"
exec "${SHARDFUZZ_COMMAND[@]}"
