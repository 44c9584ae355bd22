#!/usr/bin/env bash
# Installs dependencies, builds the shardfuzz tool and runs it on the embedded default
# (threads backend on CPU). Exits with the tool's status: 0 clean, 1 findings, 2 could not run.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

bash ci/install-deps.sh
bash ci/build.sh shardfuzz

# The one place that says what "run the tool" means: a 60-second campaign of generated scenarios
# on the threads backend under the corrected scheduler. Arguments replace the defaults, e.g.
# `bash ci/fuzz.sh --profile torch-2.9 --time 60s` to watch it find and shrink the seed leak.
if (( $# > 0 )); then
  SHARDFUZZ_COMMAND=(./build/shardfuzz fuzz "$@")
else
  SHARDFUZZ_COMMAND=(./build/shardfuzz fuzz --profile strict --time 60s --out findings)
fi

log "${SHARDFUZZ_COMMAND[*]}"
exec "${SHARDFUZZ_COMMAND[@]}"
