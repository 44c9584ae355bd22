# shellcheck shell=bash
# Sourced by the ci/ scripts: strict mode, the repository root as cwd, and where the recorded
# conformance traces live (the project's own tests/conformance/recorded; SHARDFUZZ_CONFORMANCE_DIR
# overrides it).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$REPO"

export SHARDFUZZ_CONFORMANCE_DIR="${SHARDFUZZ_CONFORMANCE_DIR:-$REPO/tests/conformance/recorded}"

log() { printf '[%s %s] %s\n' "$(basename "$0")" "$(date +%H:%M:%S)" "$*"; }
