#!/usr/bin/env bash
# Sets up (packages + build) and runs the main job on the default model: greedy generation from
# a prompt on stories260K, full cache vs. MomentKV at a small budget.
# Model: $MOMENTKV_MODEL, else ../shared/assets/stories260K.gguf.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
exec build/momentkv generate -p "Once upon a time" -n 128 "$@"
