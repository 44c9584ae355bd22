#!/usr/bin/env bash
# Installs the Debian 12 packages shardfuzz needs to build and test. Does nothing (no apt-get at
# all) when every package is already installed, so CI and repeated runs stay fast.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

PACKAGES=(
  build-essential cmake ninja-build ccache
  libtorch-dev nlohmann-json3-dev libcli11-dev
  libtomlplusplus-dev  # torchtitan job TOMLs (shardfuzz import; header-only)
  libopenblas0-pthread  # the libblas.so.3 LibTorch calls: 3-4x the reference BLAS (docs/runtime.md)
  librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsqlitecpp-dev libsqlite3-dev  # the findings database across nights (fuzz/findings)
  python3  # compiles the exported torch reproducers (py_compile) in the tests
  libjs-chart.js chromium  # HTML reports' plots, and their end-to-end test in headless Chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == installed ]] || missing+=("$pkg")
done

if (( ${#missing[@]} == 0 )); then
  log "all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

log "installing: ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
