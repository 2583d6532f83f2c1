#!/usr/bin/env bash
# Issue 19's side-by-side matrix in one command: for F16, Q8_0 and Q4_K models of the
# Llama-3.2-1B shape (random weights, made with `momentkv make-model` when missing), run.sh's
# alternating rounds of llama-bench and `momentkv bench` (default flags) on pp512, pp4096, tg128,
# tg128@d4096 with the full cache and with MomentKV L=1024; on a host with the avx512 variant,
# pp512 and tg128 again with MOMENTKV_CPU=avx2 against llama.cpp limited to AVX2 as well
# (run.sh's LLAMA_CPU=avx2: the two engines on the instruction set of an AVX2-only host). Writes
# a markdown file: what it shows, the command, the commit, the date, the CPU and its flags, then
# one table row per test with both engines' medians, the ratio of the medians and the median and
# range of the rounds' ratios. Rows are appended as they finish, so an interrupted run keeps what
# it measured.
#
# Usage: tools/llamacpp_side_by_side/matrix.sh OUT.md [THREADS]
# Environment: MODELS (folder of the GGUFs, default /tmp/momentkv-models), SHAPE (make-model's
# --shape, default llama-3.2-1b; tiny-llama for a quick check of the script), TYPES (default
# "F16 Q8_0 Q4_K"; any of make-model's --type, e.g. Q4_K_M, llama.cpp's most used mix), TESTS (default "pp512 pp4096 tg128 tg128@d4096 tg128@d4096+momentkv"),
# ROUNDS (rounds of the depth-0 tests of up to 512 tokens, default 3; the others run one round of
# one repetition), FORCED_AVX2 (0 skips the MOMENTKV_CPU=avx2 rows), FORCED_LLAMA_CPU (llama.cpp's
# build in those rows: avx2, the default, or native), MOMENTKV_BIN; run.sh's REPS,
# LLAMA_BENCH_FLAGS and MOMENTKV_CACHE pass through.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
usage="usage: matrix.sh OUT.md [THREADS]"
out=${1:?$usage}
threads=${2:-2}
# shellcheck source=../lib/bench_args.sh
source "$root/tools/lib/bench_args.sh"
require_positive_int THREADS "$threads"
models=${MODELS:-/tmp/momentkv-models}
shape=${SHAPE:-llama-3.2-1b}
types=${TYPES:-F16 Q8_0 Q4_K}
tests=${TESTS:-pp512 pp4096 tg128 tg128@d4096 tg128@d4096+momentkv}
rounds=${ROUNDS:-3}
require_positive_int ROUNDS "$rounds"
momentkv=${MOMENTKV_BIN:-$root/build/momentkv}
export MOMENTKV_BIN=$momentkv
[ -x "$momentkv" ] || { echo "error: no momentkv binary at $momentkv (build it, or set MOMENTKV_BIN)" >&2; exit 1; }
for type in $types; do
  case $type in F32 | F16 | BF16 | Q8_0 | Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q4_K | Q5_K | Q6_K | Q4_K_M | Q5_K_M) ;;
    *) echo "error: TYPES: unknown type '$type' (make-model's: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M)" >&2; exit 1 ;;
  esac
done
for t in $tests; do
  [[ "$t" =~ ^(pp|tg)[1-9][0-9]*(@d[0-9]+)?(\+momentkv)?$ ]] ||
    { echo "error: TESTS: '$t' is not ppN, tgN, ppN@dD or tgN@dD (with +momentkv for MomentKV L=1024)" >&2; exit 1; }
done
forced_avx2=${FORCED_AVX2:-1}
forced_llama_cpu=${FORCED_LLAMA_CPU:-avx2}
case $forced_llama_cpu in native | avx2) ;; *) echo "error: FORCED_LLAMA_CPU must be avx2 or native, got '$forced_llama_cpu'" >&2; exit 1 ;; esac
if [ "$forced_avx2" = 1 ] && ! "$momentkv" --version | grep -q 'available: [^;]*\bavx512\b\(,\|;\)'; then
  forced_avx2=0  # no avx512 variant on this host: the default rows already run avx2
fi

mkdir -p "$models" "$(dirname "$out")"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
family=$(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
model_id=$(grep -m1 '^model\s*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512_vnni|avx512_bf16)$' | paste -sd ' ')
{
  echo "# momentkv against llama.cpp, side by side: issue 19's matrix"
  echo
  echo "- **What it shows:** \`llama-bench\` (llama.cpp built from source, native flags) against"
  echo "  \`momentkv bench\` with default flags on random-weight GGUFs of the $shape shape, in"
  echo "  alternating rounds (\`tools/llamacpp_side_by_side/run.sh\`); ratio = momentkv / llama.cpp. In the"
  echo "  MomentKV rows momentkv holds 1024 cached rows per KV head, llama.cpp its full cache. Both keep"
  echo "  keys and values in fp16, their default (momentkv bench's from e70f62e). Rows marked"
  echo "  \"avx2 (forced; llama.cpp avx2)\" run \`MOMENTKV_CPU=avx2\` against llama.cpp built for AVX2 only"
  echo "  (\`LLAMA_CPU=avx2\`): both engines on an AVX2-only host's instruction set."
  echo "- **Command:** \`tools/llamacpp_side_by_side/matrix.sh $out $threads\` (SHAPE=$shape, TYPES=\"$types\","
  echo "  TESTS=\"$tests\", ROUNDS=$rounds)"
  echo "- **momentkv:** commit $("$momentkv" --version | sed -n 's/.* commit \([^ ]*\) .*/\1/p') ($("$momentkv" --version | head -1))"
  echo "- **Date:** $(date -u '+%Y-%m-%d %H:%M UTC'). **CPU:** $cpu (family $family model $model_id; $flags), $(nproc) cores, $threads threads"
  echo
  echo "| model | test | kernels | llama.cpp t/s (median) | momentkv t/s (median) | ratio of medians | round ratios: median (range) |"
  echo "|---|---|---|---:|---:|---:|---|"
} > "$out"

# One row: run.sh on MODEL for TEST (ppN..., "+momentkv" = MomentKV L=1024), under the kernels
# named by LABEL (MOMENTKV_CPU in the environment when not "default").
row() {
  local type=$1 test=$2 label=$3 model=$4
  local base=${test%+momentkv} extra=() n_rounds=$rounds reps=${REPS:-3}
  [ "$base" != "$test" ] && extra=(-- --press momentkv --kv-budget 1024)
  if [[ "$base" == *@d* ]] || [[ "$base" =~ ^pp([0-9]+) && ${BASH_REMATCH[1]} -gt 512 ]]; then
    n_rounds=1; reps=1
  fi
  echo "== $type $test ($label kernels): $n_rounds rounds of $reps" >&2
  local log
  log=$(REPS=$reps "$here/run.sh" "$model" "$base" "$n_rounds" "$threads" "${extra[@]}" | tee /dev/stderr)
  [ -n "$llama_line" ] || llama_line=$(grep -m1 '^# llama.cpp' <<< "$log" | sed 's/^# //; s/;.*//')
  python3 - "$type" "$test" "$label" "$log" >> "$out" <<'EOF'
import re, sys
type_, test, label, log = sys.argv[1:]
m = re.search(r"median: llama.cpp ([\d.]+), momentkv ([\d.]+) t/s; momentkv / llama.cpp = ([\d.]+)x; "
              r"median of round ratios ([\d.]+)x \(range ([\d.]+)-([\d.]+)\)", log)
if not m:
    sys.exit(f"error: no summary line in run.sh's output for {type_} {test}")
name = test.replace("+momentkv", ", MomentKV L=1024").replace("@d", " @ d")
print(f"| {type_} | {name} | {label} | {m[1]} | {m[2]} | **{m[3]}x** | {m[4]}x ({m[5]}-{m[6]}) |")
EOF
}

llama_line=""
for type in $types; do
  lower=$(echo "$type" | tr 'A-Z' 'a-z' | tr -d '_')
  model="$models/$shape-$lower.gguf"
  if [ ! -f "$model" ]; then
    echo "== making $model" >&2
    "$momentkv" make-model --shape "$shape" --type "$type" -o "$model" >&2
  fi
  for test in $tests; do row "$type" "$test" default "$model"; done
  if [ "$forced_avx2" = 1 ]; then
    for test in pp512 tg128; do
      MOMENTKV_CPU=avx2 LLAMA_CPU=$forced_llama_cpu row "$type" "$test" "avx2 (forced; llama.cpp $forced_llama_cpu)" "$model"
    done
  fi
done
forced_note=""
[ "$forced_avx2" = 1 ] && [ "$forced_llama_cpu" = avx2 ] && forced_note=" (the forced-avx2 rows: the same release built for AVX2 only)"
printf '\n%s, built by run.sh%s; in each row both engines ran the same test in\nalternating rounds.\n' \
  "${llama_line:-llama.cpp (no row ran)}" "$forced_note" >> "$out"
echo "wrote $out" >&2
