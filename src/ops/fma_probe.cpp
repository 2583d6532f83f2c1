#include "ops/fma_probe.h"

#include <omp.h>

#include <chrono>

#include "core/error.h"
#include "ops/simd.h"

namespace mkv {

std::vector<double> fma_probe_passes(int passes, int64_t iterations) {
  MKV_CHECK(passes > 0 && iterations > 0, "FMA probe: passes and iterations must be positive");
  constexpr int kChains = 12;
  const int threads = omp_get_max_threads();
  volatile float seed = 1e-3f;  // distinct, opaque starting values: no chain can be folded away
  std::vector<double> gflops;
  for (int pass = 0; pass < passes + 1; ++pass) {  // the first pass warms up (clocks)
    float sink = 0.0f;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    {
      const float s = seed;
      const simd::F8 scale = simd::f8_set1(0.999f), add = simd::f8_set1(s);
      simd::F8 chains[kChains];
      for (int c = 0; c < kChains; ++c) chains[c] = simd::f8_set1(s * static_cast<float>(c + 1));
      for (int64_t i = 0; i < iterations; ++i)
        for (auto& c : chains) c = simd::fmadd(c, scale, add);
      simd::F8 total = chains[0];
      for (int c = 1; c < kChains; ++c) total = total + chains[c];
      sink += simd::hsum(total);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seed = seed + sink * 0.0f;  // keeps the result alive
    if (pass > 0) gflops.push_back(2.0 * 8 * kChains * static_cast<double>(iterations) * threads / elapsed / 1e9);
  }
  return gflops;
}

}  // namespace mkv
