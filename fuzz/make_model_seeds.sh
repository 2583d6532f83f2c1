#!/bin/sh
# Writes the seed models of model_fuzz and gguf_fuzz: tiny random models of each architecture in
# a few weight types (about 100-230 KB each).
#   fuzz/make_model_seeds.sh MOMENTKV_BINARY OUT_DIR
set -eu
[ $# -eq 2 ] || { echo "usage: $0 MOMENTKV_BINARY OUT_DIR" >&2; exit 2; }
mkdir -p "$2"
for shape_type in tiny-llama:Q8_0 tiny-qwen2:F16 tiny-qwen3:Q4_0 tiny-llama:Q5_1; do
  shape=${shape_type%%:*}
  type=${shape_type##*:}
  "$1" make-model --shape "$shape" --type "$type" -o "$2/$shape-$type.gguf" >/dev/null
done
