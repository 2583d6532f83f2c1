#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite:
#   1. the GGUF reader's malformed-input tests under ASan/UBSan (build-asan, only what they need);
#   2. the kernel tests on the portable scalar path (build-scalar, MOMENTKV_NATIVE=OFF);
#   3. every test of the default Release build with ctest (its summary is the last line).
# Shared assets are read from ../shared/assets (or $MOMENTKV_ASSETS); tests needing them skip
# with a message when absent.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

scripts/setup.sh build

echo "== GGUF reader under AddressSanitizer + UndefinedBehaviorSanitizer" >&2
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOMENTKV_SANITIZE=address,undefined >/dev/null
cmake --build build-asan --target test_gguf -j "$jobs"
build-asan/tests/test_gguf --gtest_brief=1

echo "== kernels on the scalar path" >&2
cmake -S . -B build-scalar -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOMENTKV_NATIVE=OFF >/dev/null
cmake --build build-scalar --target test_ops -j "$jobs"
build-scalar/tests/test_ops --gtest_brief=1

echo "== full suite (Release, native kernels)" >&2
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
