#!/usr/bin/env bash
# Accuracy vs KV budget of every press, with and without NC, on the trained model's own needle
# tasks (held-out RULER-format files from make_eval_set.py), through `momentkv eval ruler`; then a
# markdown table and score-vs-budget plots with `momentkv report`.
#
#   tools/train/eval_presses.sh [MODEL] [OUT] [BINARY]
#
# Defaults: models/stories-needle-2k.gguf, /tmp/needle_presses, build/momentkv. Set BUDGETS,
# THREADS or DATA (a folder holding own_niah_*.jsonl) to override, and KERNEL to set the max-pool
# kernel of the presses that pool their scores (SnapKV, PyramidKV, Ada-KV, MomentKV; default 7).
# This model writes a 7-digit value as 8 tokens, so a kernel of 7 keeps only about 4 of them
# around the position the question attends to (KERNEL=15 keeps them all). Runs resume: results
# already in OUT are kept and only missing predictions are computed.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-models/stories-needle-2k.gguf}
out=${2:-/tmp/needle_presses}
binary=${3:-build/momentkv}
budgets=${BUDGETS:-64,128,256,512}
data=${DATA:-models/eval}

pool=${KERNEL:+kernel=$KERNEL,}  # "kernel=15," or nothing
presses=(full streaming_llm streaming_llm:nc=1 h2o h2o:nc=1)
for press in snapkv pyramidkv adakv; do
  presses+=("$press${pool:+:${pool%,}}" "$press:${pool}nc=1")
done
presses+=("momentkv:${pool}nc=0" "momentkv${pool:+:${pool%,}}" "momentkv:${pool}variant=paper")

press_flags=()
for press in "${presses[@]}"; do press_flags+=(--press "$press"); done
"$binary" eval ruler -m "$model" --data "$data"/own_niah_*.jsonl "${press_flags[@]}" --budgets "$budgets" \
  --chat-template none -t "${THREADS:-2}" -o "$out"
"$binary" report "$out" -o "$out/report"
echo "table: $out/report/report.md" >&2
