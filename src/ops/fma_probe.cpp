#include "ops/fma_probe.h"

#include <omp.h>

#include <chrono>

#include "core/error.h"
#include "ops/cpu_features.h"
#include "ops/simd.h"

namespace mkv {
namespace {

constexpr int kChains = 12;

// One thread's kChains chains of 8-lane FMAs from seed s; returns their sum (kept alive by the caller).
float run_chains_8(float s, int64_t iterations) {
  const simd::F8 scale = simd::f8_set1(0.999f), add = simd::f8_set1(s);
  simd::F8 chains[kChains];
  for (int c = 0; c < kChains; ++c) chains[c] = simd::f8_set1(s * static_cast<float>(c + 1));
  for (int64_t i = 0; i < iterations; ++i)
    for (auto& c : chains) c = simd::fmadd(c, scale, add);
  simd::F8 total = chains[0];
  for (int c = 1; c < kChains; ++c) total = total + chains[c];
  return simd::hsum(total);
}

#if defined(__x86_64__) && MKV_SIMD >= 2
// The same in 16-lane registers, for the hosts whose kernels are the AVX-512 variant's (the float
// GEMM's block is 16-lane there); called only when cpu_variant() is Avx512. In a namespace named
// avx512, as the AVX-512 kernel code is (tests/ops/isa_isolation_test.cpp).
namespace avx512 {
__attribute__((target("avx512f"))) float run_chains_16(float s, int64_t iterations) {
  const __m512 scale = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(s);
  __m512 chains[kChains];
  for (int c = 0; c < kChains; ++c) chains[c] = _mm512_set1_ps(s * static_cast<float>(c + 1));
  for (int64_t i = 0; i < iterations; ++i)
    for (auto& c : chains) c = _mm512_fmadd_ps(c, scale, add);
  __m512 total = chains[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, chains[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, total);
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  return sum;
}
}  // namespace avx512
#endif

}  // namespace

std::vector<double> fma_probe_passes(int passes, int64_t iterations) {
  MKV_CHECK(passes > 0 && iterations > 0, "FMA probe: passes and iterations must be positive");
  const int threads = omp_get_max_threads();
#if defined(__x86_64__) && MKV_SIMD >= 2
  const bool wide = cpu_variant() == CpuVariant::Avx512;
#else
  const bool wide = false;
#endif
  const int lanes = wide ? 16 : 8;
  volatile float seed = 1e-3f;  // distinct, opaque starting values: no chain can be folded away
  std::vector<double> gflops;
  for (int pass = 0; pass < passes + 1; ++pass) {  // the first pass warms up (clocks)
    float sink = 0.0f;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    {
#if defined(__x86_64__) && MKV_SIMD >= 2
      sink += wide ? avx512::run_chains_16(seed, iterations) : run_chains_8(seed, iterations);
#else
      sink += run_chains_8(seed, iterations);
#endif
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seed = seed + sink * 0.0f;  // keeps the result alive
    if (pass > 0) gflops.push_back(2.0 * lanes * kChains * static_cast<double>(iterations) * threads / elapsed / 1e9);
  }
  return gflops;
}

}  // namespace mkv
