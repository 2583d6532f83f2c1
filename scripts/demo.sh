#!/usr/bin/env bash
# Sets up (packages + build) and runs the main job on the default model, the project's own
# long-context model models/stories-needle-2k.gguf (or $MOMENTKV_MODEL; extra flags are passed to
# generate and kl): greedy generation with the full cache and with MomentKV at a 32-token budget
# per KV head; needle retrieval in 2K-token prompts with the full cache and with SnapKV and
# MomentKV keeping 64 tokens per KV head (score pooling kernel 15: this model writes a 7-digit value
# as 8 tokens, see models/MODEL_CARD.md); then the KL of SnapKV and MomentKV against the full
# cache at 32 tokens on TinyStories text.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
model=${MOMENTKV_MODEL:-models/stories-needle-2k.gguf}
echo "== $model, full cache" >&2
build/momentkv generate -m "$model" -p "Once upon a time" -n 96 --temp 0 "$@"
echo "== MomentKV, 32 tokens per KV head" >&2
build/momentkv generate -m "$model" -p "Once upon a time" -n 96 --temp 0 --press momentkv --kv-budget 32 "$@"
if [[ "$model" == models/stories-needle-2k.gguf ]]; then
  echo "== needle retrieval, 30 held-out 2K-token prompts (models/eval/own_niah_single.jsonl), 64 tokens per KV head" >&2
  out=$(mktemp -d)
  build/momentkv eval ruler -m "$model" --data models/eval/own_niah_single.jsonl --press full --press snapkv:kernel=15 \
    --press momentkv:kernel=15 --budgets 64 --chat-template none -o "$out" >/dev/null
  build/momentkv report "$out" -o "$out/report" >/dev/null
  grep '^|' "$out/report/report.md"
  rm -rf "$out"
fi
echo "== KL against the full cache (1 window of 448 + 64 tokens)" >&2
build/momentkv kl -m "$model" --press snapkv --press momentkv --budgets 32 --windows 1 "$@"
