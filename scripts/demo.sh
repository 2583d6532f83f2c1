#!/usr/bin/env bash
# Sets up (packages + build) and runs the main job on the default model (stories260K, or
# $MOMENTKV_MODEL / -m FILE passed through): greedy generation with the full cache and with
# MomentKV at a 32-token budget per KV head, then the KL of SnapKV and MomentKV against the full
# cache at that budget on TinyStories text.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
echo "== full cache" >&2
build/momentkv generate -p "Once upon a time" -n 96 --temp 0 "$@"
echo "== MomentKV, 32 tokens per KV head" >&2
build/momentkv generate -p "Once upon a time" -n 96 --temp 0 --press momentkv --kv-budget 32 "$@"
echo "== KL against the full cache (1 window of 448 + 64 tokens)" >&2
build/momentkv kl --press snapkv --press momentkv --budgets 32 --windows 1 "$@"
