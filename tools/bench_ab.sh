#!/usr/bin/env bash
# A/B speed of two momentkv builds on one host: `momentkv bench` of build A and of build B on the
# same GGUF and test in alternating rounds (A B, then B A, ...), so that a shared host's drift in
# memory bandwidth hits both, and a summary: each build's median, the ratio B / A of the medians,
# the median and range of the rounds' ratios, and in how many rounds B was ahead.
#
# A and B are each a momentkv executable or a git revision of this repository. A revision is
# checked out (a shared clone) and its momentkv target built in Release once, in a cache folder
# named after its commit, with the CMake options of scripts/setup.sh (tests, benchmarks and the
# Python module off).
#
# Usage: tools/bench_ab.sh A B MODEL.gguf [ROUNDS] [THREADS] [-- momentkv bench flags]
#   e.g. tools/bench_ab.sh 9d6cd65~1 9d6cd65 /tmp/1b-f16.gguf 8 2
#        tools/bench_ab.sh /tmp/momentkv-old build/momentkv /tmp/1b-q8.gguf 6 2 -- --precision exact
# Environment: TEST (ppN, tgN, ppN@dD or tgN@dD, default tg64), REPS (repetitions per build and
# round, default 2), AB_CACHE (default ~/.cache/momentkv/ab). MOMENTKV_CPU and the other
# variables momentkv reads pass through to both builds.
# Output: the CPU and each build's `--version` line, one line per build and round ("A round 1:
# 31.52 t/s"), then the summary lines, which start with "median:", "rounds:" and "B ahead:".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
usage="usage: bench_ab.sh A B MODEL.gguf [ROUNDS] [THREADS] [-- momentkv bench flags] (A, B: an executable or a git revision)"
[ $# -ge 3 ] || { echo "error: $usage" >&2; exit 1; }
a=$1 b=$2 model=$3
rounds=${4:-6}
threads=${5:-2}
shift $(( $# < 5 ? $# : 5 ))
[ "${1:-}" = "--" ] && shift
[ -f "$model" ] || { echo "error: no model file '$model'" >&2; exit 1; }
# shellcheck source=lib/bench_args.sh
source "$here/lib/bench_args.sh"
require_positive_int ROUNDS "$rounds"
require_positive_int THREADS "$threads"
reps=${REPS:-2}
require_positive_int REPS "$reps"
test=${TEST:-tg64}
parse_bench_test "$test"
cache=${AB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/momentkv/ab}

# The momentkv executable for $1: the file itself, or the build of the revision it names.
resolve() {
  local spec=$1 commit dir
  if [ -f "$spec" ] && [ -x "$spec" ]; then
    echo "$spec"
    return
  fi
  if ! commit=$(git -C "$root" rev-parse --verify --quiet "$spec^{commit}"); then
    echo "error: '$spec' is neither an executable file nor a revision of $root" >&2
    return 1
  fi
  dir="$cache/$commit"
  if [ ! -x "$dir/build/momentkv" ]; then
    echo "building momentkv at $spec (${commit:0:10}) in $dir ..." >&2
    mkdir -p "$cache"
    rm -rf "$dir.partial"
    git clone -q --shared --no-checkout "$root" "$dir.partial"
    git -C "$dir.partial" checkout -q --detach "$commit"
    if ! { cmake -S "$dir.partial" -B "$dir.partial/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOMENTKV_TESTS=OFF \
             -DMOMENTKV_BENCH=OFF -DMOMENTKV_PYTHON=OFF > "$cache/${commit}.log" 2>&1 &&
           cmake --build "$dir.partial/build" --target momentkv -j "$(nproc)" >> "$cache/${commit}.log" 2>&1; }; then
      echo "error: building momentkv at $spec failed; the log: $cache/${commit}.log" >&2
      return 1
    fi
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
  fi
  echo "$dir/build/momentkv"
}
bin_a=$(resolve "$a")
bin_b=$(resolve "$b")

echo "# $test, threads $threads, $rounds rounds of $reps repetitions; model $(basename "$model"); CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') (family $(grep -m1 'cpu family' /proc/cpuinfo | awk '{print $NF}') model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | awk '{print $NF}'))"
# "SPEC (commit C): kernels ..." from the --version lines of executable $2.
describe() {
  local version
  version=$("$2" --version 2>&1 || true)
  echo "$1 ($(grep -o -m1 'commit [^ ]*' <<< "$version" || echo 'commit unknown')): $(grep -o -m1 'kernels [^ ]*' <<< "$version" || echo 'kernels unknown')"
}
echo "# A: $(describe "$a" "$bin_a")"
echo "# B: $(describe "$b" "$bin_b")"

# One bench run of executable $1 (bench flags after it); prints the mean t/s of its last result row
# (with --press at a depth, the press's row).
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
run_bench() {
  local out
  if ! out=$("$1" bench -m "$model" -p "$n_prompt" -n "$n_gen" -d "$depth" -r "$reps" -t "$threads" --no-probe -o json "${@:2}" 2> "$errors"); then
    echo "error: $1 bench failed: $(grep -m1 'error' "$errors" | sed 's/^error: //' || tail -1 "$errors")" >&2
    return 1
  fi
  python3 -c 'import json, sys
rows = json.load(sys.stdin)["results"]
print("%.2f" % rows[-1]["avg_ts"])' <<< "$out"
}

results=()
for ((r = 1; r <= rounds; r++)); do
  order=(A B)
  (( r % 2 == 0 )) && order=(B A)
  for which in "${order[@]}"; do
    bin=$bin_a
    [ "$which" = B ] && bin=$bin_b
    ts=$(run_bench "$bin" "$@")
    echo "$which round $r: $ts t/s"
    results+=("$which $r $ts")
  done
done

printf '%s\n' "${results[@]}" | python3 -c 'import statistics, sys
runs = {}
for line in sys.stdin:
    which, r, ts = line.split()
    runs.setdefault(which, {})[int(r)] = float(ts)
a, b = runs["A"], runs["B"]
ratios = [b[r] / a[r] for r in sorted(a)]
print("median: A %.2f, B %.2f t/s; B / A = %.3fx" % (statistics.median(a.values()), statistics.median(b.values()),
      statistics.median(b.values()) / statistics.median(a.values())))
print("rounds: B / A median %.3fx (range %.3f-%.3f)" % (statistics.median(ratios), min(ratios), max(ratios)))
print("B ahead: %d of %d rounds" % (sum(x > 1 for x in ratios), len(ratios)))'
