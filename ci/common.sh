# shellcheck shell=bash
# Sourced by the ci/ scripts: strict mode, the repository root as cwd, and where the recorded
# conformance traces live (SHARDFUZZ_CONFORMANCE_DIR overrides the sibling shared/ checkout).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$REPO"

export SHARDFUZZ_CONFORMANCE_DIR="${SHARDFUZZ_CONFORMANCE_DIR:-$REPO/../shared/conformance/traces}"

log() { printf '[%s %s] %s\n' "$(basename "$0")" "$(date +%H:%M:%S)" "$*"; }
