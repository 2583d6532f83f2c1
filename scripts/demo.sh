#!/usr/bin/env bash
# Sets up (packages + build) and runs the main job on the default model, the project's own
# long-context model models/stories-needle-2k.gguf (or $MOMENTKV_MODEL; extra flags are passed to
# generate and kl): one long needle prompt answered with the full cache, StreamingLLM, SnapKV and
# MomentKV keeping 64 tokens per KV head, with the cache bytes each keeps; needle retrieval in
# 2K-token prompts of the held-out test split with the full cache and with Ada-KV and MomentKV
# keeping 64 tokens per KV head, every press at its defaults; then the KL of SnapKV and MomentKV
# against the full cache at 32 tokens on the repository's own text ($MOMENTKV_TEXT to change it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
model=${MOMENTKV_MODEL:-models/stories-needle-2k.gguf}
if [[ "$model" == models/stories-needle-2k.gguf ]]; then
  # One long prompt: a 1K-token story with a "magic number" needle, asked for at the end (the full
  # cache answers 7624039). Each press keeps 64 tokens per KV head; the table shows the answer and
  # the cache bytes held after the prompt against the full cache's.
  prompt=tests/engine/data/trained_model_needle.txt
  echo "== one long prompt ($prompt), greedy, 64 tokens per KV head: the answer and the KV cache kept" >&2
  printf '| press | answer | KV bytes after the prompt | share of the full cache |\n|---|---|---|---|\n'
  for press in full streaming_llm snapkv momentkv; do
    flags=(); [[ $press == full ]] || flags=(--press "$press" --kv-budget 64)
    err=$(mktemp)
    reply=$(build/momentkv generate -m "$model" -f "$prompt" -n 8 --temp 0 "${flags[@]}" "$@" 2>"$err" |
            tail -c +"$(($(wc -c <"$prompt") + 1))" | tr '\n' ' ' | sed 's/^ *//; s/ *$//')
    read -r held full < <(sed -n 's/^kv cache after the prompt: \([0-9]*\) bytes held.*uncompressed: \([0-9]*\) bytes$/\1 \2/p' "$err")
    rm -f "$err"
    printf '| %s | `%s` | %s | %s%% |\n' "$press" "${reply:-(blank)}" "$held" "$(awk -v a="$held" -v b="$full" 'BEGIN{printf "%.1f", 100*a/b}')"
  done
else
  echo "== $model, full cache, then MomentKV at 32 tokens per KV head" >&2
  build/momentkv generate -m "$model" -p "Once upon a time" -n 96 --temp 0 "$@"
  build/momentkv generate -m "$model" -p "Once upon a time" -n 96 --temp 0 --press momentkv --kv-budget 32 "$@"
fi
if [[ "$model" == models/stories-needle-2k.gguf ]]; then
  echo "== needle retrieval, 30 held-out 2K-token prompts (models/eval/test/own_niah_single.jsonl), 64 tokens per KV head" >&2
  out=$(mktemp -d)
  build/momentkv eval ruler -m "$model" --data models/eval/test/own_niah_single.jsonl --press full --press adakv \
    --press momentkv --budgets 64 --chat-template none -o "$out" >/dev/null
  build/momentkv report "$out" -o "$out/report" >/dev/null
  grep '^|' "$out/report/report.md"
  rm -rf "$out"
fi
# The repository's own text (a clone has no ../shared): one window of 448 + 64 tokens.
text=${MOMENTKV_TEXT:-tests/engine/data/trained_model_needle.txt}
echo "== KL against the full cache (1 window of 448 + 64 tokens of $text)" >&2
build/momentkv kl -m "$model" -f "$text" --press snapkv --press momentkv --budgets 32 --windows 1 "$@"
