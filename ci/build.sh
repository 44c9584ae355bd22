#!/usr/bin/env bash
# Configures ./build (Ninja, RelWithDebInfo, ccache when present) and builds it.
# Usage: ci/build.sh [TARGET...]   (no target: everything)
# SHARDFUZZ_BUILD_DIR names another build folder and SHARDFUZZ_CMAKE_ARGS adds options, e.g. the
# coverage build of ci/coverage-campaign.sh: SHARDFUZZ_BUILD_DIR=build-cov
# SHARDFUZZ_CMAKE_ARGS="-DSHARDFUZZ_COVERAGE=ON -DSHARDFUZZ_BUILD_TESTS=OFF" ci/build.sh shardfuzz
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

BUILD_DIR="${SHARDFUZZ_BUILD_DIR:-build}"
[[ "$BUILD_DIR" = /* ]] || BUILD_DIR="$REPO/$BUILD_DIR"
export CCACHE_DIR="${CCACHE_DIR:-${HOME:-/tmp}/.ccache}"
# Cache hits across checkouts (CI builds a fresh clone in another folder): paths relative to the
# repo, and the working directory kept out of the hash although -g records it.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$REPO}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# A CMake cache made for another source folder (a copied or cloned build/) or another generator
# makes cmake refuse to configure; its generated files are useless here, so drop them.
cache="$BUILD_DIR/CMakeCache.txt"
if [[ -f "$cache" ]]; then
  home="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")"
  generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache")"
  if [[ "$home" != "$REPO" || "$generator" != Ninja ]]; then
    log "$BUILD_DIR was configured for '$home' ($generator); reconfiguring for $REPO"
    rm -rf "$cache" "$BUILD_DIR/CMakeFiles" "$BUILD_DIR/build.ninja" \
           "$BUILD_DIR/.ninja_log" "$BUILD_DIR/.ninja_deps"
  fi
fi

cmake_args=(-S "$REPO" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
# shellcheck disable=SC2206  # options are words
if [[ -n "${SHARDFUZZ_CMAKE_ARGS:-}" ]]; then cmake_args+=(${SHARDFUZZ_CMAKE_ARGS}); fi
if command -v ccache >/dev/null 2>&1; then
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

log "configure"
cmake "${cmake_args[@]}"
targets=()
if (( $# > 0 )); then targets=(--target "$@"); fi
log "build ${*:-all targets} with -j$(nproc)"
cmake --build "$BUILD_DIR" --parallel "$(nproc)" "${targets[@]}"
log "build done"
