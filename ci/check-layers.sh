#!/usr/bin/env bash
# The layering (app -> fuzz -> harness -> runtime, no circle between a folder and its sub-folders, no
# two files of one folder that include each other), from the includes; ctest runs it as check_layers.
# An argument names another tree to check (default: this repository).
exec python3 "$(dirname "$0")/check-layers.py" "$@"
