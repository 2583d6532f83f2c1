#!/usr/bin/env bash
# Side-by-side speed of momentkv and llama.cpp on one host: `llama-bench` and `momentkv bench` run
# the same test on the same GGUF in alternating rounds, so that a shared host's drift hits both.
#
# llama.cpp is built from source with its native CPU flags (GGML_NATIVE=ON), once, in a cache
# folder: the source is the release bundled in the npm package node-llama-cpp (its
# llama/gitRelease.bundle, a git bundle of the llama.cpp release the package pins), fetched with
# `npm pack` from the npm registry. Nothing is installed system-wide. LLAMA_CPU=avx2 builds and
# runs a second copy limited to AVX2/FMA/F16C/BMI2 (GGML_NATIVE=OFF), the instruction set of an
# AVX2-only host, to set against `MOMENTKV_CPU=avx2 momentkv` on an AVX-512 host.
#
# Usage: tools/llamacpp_side_by_side/run.sh MODEL.gguf TEST [ROUNDS] [THREADS] [-- momentkv bench flags]
#   TEST: ppN (prefill N tokens), tgN (decode N tokens), ppN@dD or tgN@dD (after a D-token depth)
#   e.g. run.sh /tmp/1b-q8.gguf pp512 3 2
#        run.sh /tmp/1b-q8.gguf tg128@d4096 2 2 -- --press momentkv --kv-budget 1024
# Environment: REPS (repetitions per engine and round, default 3), MOMENTKV_BIN (default
# build/momentkv), LLAMA_CPU (native, the default, or avx2), LLAMA_BENCH_FLAGS (extra llama-bench flags,
# e.g. "-fa 1"), MOMENTKV_CACHE (cache root, default ~/.cache/momentkv).
# Output: one line per engine and round, "ENGINE TEST t/s ± sd", then the median of each engine,
# their ratio (momentkv / llama.cpp), and the median and range of the rounds' ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
usage="usage: run.sh MODEL.gguf ppN|tgN|ppN@dD|tgN@dD [ROUNDS] [THREADS] [-- momentkv bench flags]"
model=${1:?$usage}
test=${2:?$usage}
rounds=${3:-3}
threads=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift
[ -f "$model" ] || { echo "error: no model file '$model'" >&2; exit 1; }
# shellcheck source=../lib/bench_args.sh
source "$root/tools/lib/bench_args.sh"
require_positive_int ROUNDS "$rounds"
reps=${REPS:-3}
require_positive_int REPS "$reps"
require_positive_int THREADS "$threads"
parse_bench_test "$test"

version=3.22.1
cache=${MOMENTKV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/momentkv}/llama.cpp-node-llama-cpp-$version
llama_cpu=${LLAMA_CPU:-native}
case $llama_cpu in
  native) build_dir=build; cpu_flags=(-DGGML_NATIVE=ON); flags_name=GGML_NATIVE ;;
  avx2) build_dir=build-avx2; flags_name="AVX2 only"
    cpu_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
               -DGGML_AVX512_BF16=OFF) ;;
  *) echo "error: LLAMA_CPU must be native or avx2, got '$llama_cpu'" >&2; exit 1 ;;
esac
llama_bench="$cache/$build_dir/bin/llama-bench"
if [ ! -x "$llama_bench" ]; then
  echo "building llama.cpp (node-llama-cpp $version's release, $flags_name) in $cache/$build_dir ..." >&2
  mkdir -p "$cache"
  if [ ! -d "$cache/src" ]; then
    (cd "$cache" && npm pack --silent "node-llama-cpp@$version" > /dev/null &&
       tar xzf "node-llama-cpp-$version.tgz" package/llama/gitRelease.bundle &&
       rm -rf src.partial && git clone -q package/llama/gitRelease.bundle src.partial 2> /dev/null && mv src.partial src)
  fi
  cmake -S "$cache/src" -B "$cache/$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cpu_flags[@]}" \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF > "$cache/configure-$build_dir.log"
  cmake --build "$cache/$build_dir" --target llama-bench llama-batched-bench -j "$(nproc)" > "$cache/build-$build_dir.log"
fi
momentkv=${MOMENTKV_BIN:-$root/build/momentkv}
[ -x "$momentkv" ] || { echo "error: no momentkv binary at $momentkv (build it, or set MOMENTKV_BIN)" >&2; exit 1; }

echo "# $test, $threads threads, $rounds rounds of $reps repetitions; CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# llama.cpp $(git -C "$cache/src" log -1 --format=%h 2> /dev/null || echo '?') (node-llama-cpp $version, $flags_name); $("$momentkv" --version | head -1)"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
# Prints "ENGINE TEST avg ± sd" from a CSV on stdin with columns avg_ts and stddev_ts.
csv_row() {
  python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(sys.stdin) if r.get("avg_ts")]
if not rows: sys.exit("error: no result row in the " + sys.argv[1] + " output")
avg, sd = float(rows[-1]["avg_ts"]), float(rows[-1]["stddev_ts"])
print("%-9s %s %.2f ± %.2f" % (sys.argv[1], sys.argv[2], avg, sd))' "$1" "$test"
}
for round in $(seq "$rounds"); do
  # shellcheck disable=SC2086
  "$llama_bench" -m "$model" -p "$n_prompt" -n "$n_gen" -d "$depth" -r "$reps" -t "$threads" -o csv \
    ${LLAMA_BENCH_FLAGS:-} 2> /dev/null | csv_row llama.cpp | tee -a "$results"
  "$momentkv" bench -m "$model" -p "$n_prompt" -n "$n_gen" -d "$depth" -r "$reps" -t "$threads" --no-probe -o csv "$@" \
    2> /dev/null | csv_row momentkv | tee -a "$results"
done
python3 - "$results" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    engine, _, ts = line.split()[:3]
    runs.setdefault(engine, []).append(float(ts))
med = {e: statistics.median(v) for e, v in runs.items()}
# Each round's ratio pairs two runs minutes apart; on a host whose memory speed drifts, their
# median is steadier than the ratio of the two engines' medians.
ratios = [m / l for m, l in zip(runs['momentkv'], runs['llama.cpp'])]
print(f"median: llama.cpp {med['llama.cpp']:.2f}, momentkv {med['momentkv']:.2f} t/s; "
      f"momentkv / llama.cpp = {med['momentkv'] / med['llama.cpp']:.2f}x; "
      f"median of round ratios {statistics.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f})")
EOF
