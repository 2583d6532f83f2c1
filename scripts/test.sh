#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite:
#   1. the GGUF reader's malformed-input tests and the press fuzz target's saved inputs under
#      ASan/UBSan (build-asan, only what they need);
#   2. the kernel and cache tests on the portable scalar path (build-scalar, MOMENTKV_NATIVE=OFF);
#   3. the Python module's pytest tests (python/tests, against the module built in build/);
#   4. every test of the default Release build with ctest (its summary is the last line).
# The server tests' clients (Debian's nodejs, npm, chromium; npm packages pinned in tests/serve/node,
# installed into a cache folder) and the sweep test's Slurm (slurm-wlm, munge) are set up first.
# Shared assets are read from ../shared/assets (or $MOMENTKV_ASSETS); tests needing them skip
# with a message when absent.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

scripts/setup.sh build

# Test clients: the server tests drive `momentkv serve` with the official `openai` npm client and
# its page with Debian's chromium through puppeteer-core. The npm packages are pinned by
# tests/serve/node/package-lock.json and installed into a cache folder once per lock file. Without
# Node, chromium or the npm registry those tests skip with a message.
npm_dir="${MOMENTKV_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/momentkv/npm}"
test_clients=()
command -v npm >/dev/null || test_clients+=(nodejs npm)
command -v chromium >/dev/null || test_clients+=(chromium)
# The Slurm sweep test starts a single-node cluster of its own (tests/sweep/slurm_cluster.sh).
{ [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/munged ]; } || test_clients+=(slurm-wlm munge)
if ((${#test_clients[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${test_clients[@]}" >/dev/null; } ||
    echo "test: ${test_clients[*]} could not be installed; the tests that need them will skip" >&2
fi
if command -v npm >/dev/null && ! cmp -s tests/serve/node/package-lock.json "$npm_dir/package-lock.json"; then
  mkdir -p "$npm_dir"
  cp tests/serve/node/package.json tests/serve/node/package-lock.json "$npm_dir/"
  (cd "$npm_dir" && timeout 600 npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    { echo "test: npm ci failed; the npm-client server tests will skip" >&2; rm -f "$npm_dir/package-lock.json"; }
fi

echo "== GGUF reader and presses under AddressSanitizer + UndefinedBehaviorSanitizer" >&2
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOMENTKV_SANITIZE=address,undefined >/dev/null
cmake --build build-asan --target test_gguf press_fuzz_replay -j "$jobs"
build-asan/tests/test_gguf --gtest_brief=1
build-asan/fuzz/press_fuzz_replay fuzz/corpus/press_fuzz  # the press fuzz target's saved inputs

echo "== kernels on the scalar path" >&2
cmake -S . -B build-scalar -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOMENTKV_NATIVE=OFF >/dev/null
cmake --build build-scalar --target test_ops test_kv -j "$jobs"
build-scalar/tests/test_ops --gtest_brief=1
build-scalar/tests/test_kv --gtest_brief=1  # the attention kernels and the moment math

echo "== Python module (pytest python/tests against build/)" >&2
# Debian's interpreter, which python3-pytest and python3-numpy are installed for and the module is
# built for (python/CMakeLists.txt). Any pytest failure fails the suite, "no tests collected" (5) too.
python="/usr/bin/python3"; [ -x "$python" ] || python="python3"
pytest_rc=0
MOMENTKV_BUILD_DIR=build PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -p no:cacheprovider python/tests || pytest_rc=$?
if [ "$pytest_rc" -ne 0 ]; then
  echo "test: the Python tests failed (pytest exit code $pytest_rc; 5 = no tests collected)" >&2
  exit 1
fi

echo "== golden logits on every kernel variant this host runs (MOMENTKV_CPU)" >&2
variants=$(build/momentkv --version | sed -n 's/.*(available: \([^;]*\);.*/\1/p' | tr -d ,)
[ -n "$variants" ] || { echo "test: momentkv --version named no kernel variants" >&2; exit 1; }
for variant in $variants; do
  echo "-- MOMENTKV_CPU=$variant" >&2
  MOMENTKV_CPU=$variant build/tests/test_engine --gtest_brief=1 --gtest_filter='Stories260K.*:*ArchGolden*'
done

echo "== full suite (Release, native kernels)" >&2
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
