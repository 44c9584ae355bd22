#!/usr/bin/env bash
# The layering (app -> fuzz -> harness -> runtime, no circle between a folder and its sub-folders),
# from the includes; ctest runs it as check_layers.
exec python3 "$(dirname "$0")/check-layers.py"
