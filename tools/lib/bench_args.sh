# shellcheck shell=bash
# Argument checks shared by the timing scripts (tools/bench_ab.sh, tools/llamacpp_side_by_side/);
# sourced, not run. Each prints one "error: ..." line and exits 1 on a bad value.

# require_positive_int NAME VALUE
require_positive_int() {
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "error: $1 must be a positive integer, got '$2'" >&2; exit 1; }
}

# parse_bench_test TEST: sets n_prompt, n_gen and depth from ppN, tgN, ppN@dD or tgN@dD.
# shellcheck disable=SC2034  # the variables are the sourcing script's
parse_bench_test() {
  if [[ "$1" =~ ^pp([1-9][0-9]*)(@d([0-9]+))?$ ]]; then
    n_prompt=${BASH_REMATCH[1]}; n_gen=0; depth=${BASH_REMATCH[3]:-0}
  elif [[ "$1" =~ ^tg([1-9][0-9]*)(@d([0-9]+))?$ ]]; then
    n_prompt=0; n_gen=${BASH_REMATCH[1]}; depth=${BASH_REMATCH[3]:-0}
  else
    echo "error: TEST must be ppN, tgN, ppN@dD or tgN@dD, got '$1'" >&2; exit 1
  fi
}
