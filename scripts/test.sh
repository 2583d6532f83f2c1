#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite with ctest.
# Shared assets are read from ../shared/assets (or $MOMENTKV_ASSETS); tests needing them skip
# with a message when absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
