#!/usr/bin/env bash
# Installs dependencies, builds the shardfuzz tool and runs it on the embedded default
# (threads backend on CPU). Exits with the tool's status: 0 clean, 1 findings, 2 could not run.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

bash ci/install-deps.sh
bash ci/build.sh shardfuzz

# The one place that says what "run the tool" means: a 60-second campaign of generated scenarios
# on the threads backend under the corrected scheduler (extra arguments pass through, e.g.
# `bash ci/fuzz.sh --profile torch-2.9` to watch it find and shrink the seed leak).
SHARDFUZZ_COMMAND=(./build/shardfuzz fuzz --profile strict --time 60s --out findings "$@")

log "${SHARDFUZZ_COMMAND[*]}"
exec "${SHARDFUZZ_COMMAND[@]}"
