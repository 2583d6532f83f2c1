#!/usr/bin/env bash
# Side-by-side speed of momentkv and llama.cpp on one host: both engines run the same test on the
# same GGUF in alternating rounds, so that a shared host's drift hits both alike.
# llama.cpp is the prebuilt library of the npm package @node-llama-cpp/linux-x64 (fetched with
# `npm pack` from the npm registry into a cache folder; nothing is installed system-wide).
# Usage: tools/llamacpp_side_by_side/run.sh MODEL.gguf [pp|tg] [ROUNDS] [THREADS] [-- momentkv bench flags]
#   e.g. tools/llamacpp_side_by_side/run.sh /tmp/1b-q8.gguf pp 3 2
#        tools/llamacpp_side_by_side/run.sh /tmp/1b-q8.gguf tg 2 2 -- --fast
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=${1:?usage: run.sh MODEL.gguf [pp|tg] [ROUNDS] [THREADS] [-- momentkv bench flags]}
test=${2:-pp}
rounds=${3:-3}
threads=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift
[ -f "$model" ] || { echo "error: no model file '$model'" >&2; exit 1; }
case "$test" in pp) n_prompt=512; n_gen=0 ;; tg) n_prompt=0; n_gen=128 ;; *) echo "error: test must be pp or tg, got '$test'" >&2; exit 1 ;; esac
version=3.22.1
cache=${MOMENTKV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/momentkv}/node-llama-cpp-$version
lib="$cache/package/bins/linux-x64"
if [ ! -f "$lib/libllama.v0.5.0.so" ]; then
  mkdir -p "$cache"
  (cd "$cache" && npm pack --silent "@node-llama-cpp/linux-x64@$version" > /dev/null && tar xzf node-llama-cpp-linux-x64-$version.tgz)
fi
timer="$cache/llama_timer"
if [ ! -x "$timer" ] || [ "$here/llama_timer.cpp" -nt "$timer" ]; then
  g++ -O2 -std=c++17 "$here/llama_timer.cpp" -o "$timer" "$lib/libllama.v0.5.0.so" "$lib/libggml.v0.5.0.so" -Wl,-rpath,"$lib"
fi
momentkv=${MOMENTKV_BIN:-$root/build/momentkv}
[ -x "$momentkv" ] || { echo "error: no momentkv binary at $momentkv (build it, or set MOMENTKV_BIN)" >&2; exit 1; }
for round in $(seq "$rounds"); do
  LLAMACPP_LIB_DIR="$lib" "$timer" "$model" "$n_prompt" "$n_gen" 3 "$threads" 2> /dev/null
  "$momentkv" bench -m "$model" -p "$n_prompt" -n "$n_gen" -r 3 -t "$threads" --no-probe "$@" |
    awk -F'|' -v m="$model" '/^\| .*(pp|tg)[0-9]/ { gsub(/^ +| +$/, "", $7); print "momentkv  " m " " $7 ": " $8 }'
done
