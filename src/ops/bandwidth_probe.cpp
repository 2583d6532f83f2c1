#include "ops/bandwidth_probe.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#if MOMENTKV_NATIVE
#include <immintrin.h>
#endif

namespace mkv {
namespace {

// Sum of n floats (n a multiple of 64) with four independent accumulators per 8 lanes, so that
// the loads, not the adds, set the pace.
float read_sum(const float* p, std::size_t n) {
#if MOMENTKV_NATIVE
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i < n; i += 64) {
    a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_load_ps(p + i), _mm256_load_ps(p + i + 8)));
    a1 = _mm256_add_ps(a1, _mm256_add_ps(_mm256_load_ps(p + i + 16), _mm256_load_ps(p + i + 24)));
    a2 = _mm256_add_ps(a2, _mm256_add_ps(_mm256_load_ps(p + i + 32), _mm256_load_ps(p + i + 40)));
    a3 = _mm256_add_ps(a3, _mm256_add_ps(_mm256_load_ps(p + i + 48), _mm256_load_ps(p + i + 56)));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  float s = 0.0f;
  for (float v : lanes) s += v;
  return s;
#else
  float acc[16] = {};
  for (std::size_t i = 0; i < n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += p[i + j];
  float s = 0.0f;
  for (float v : acc) s += v;
  return s;
#endif
}

}  // namespace

BandwidthProbe::BandwidthProbe(std::size_t bytes) {
  bytes_ = std::max<std::size_t>(bytes, std::size_t{1} << 20) / 4096 * 4096;
  void* mem = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  MKV_CHECK(mem != MAP_FAILED, "bandwidth probe: cannot map {} bytes", bytes_);
  madvise(mem, bytes_, MADV_HUGEPAGE);
  data_ = static_cast<float*>(mem);
  const std::size_t n = bytes_ / sizeof(float);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) data_[i] = static_cast<float>(i & 7) * 0.125f;
}

BandwidthProbe::~BandwidthProbe() { munmap(data_, bytes_); }

std::vector<double> BandwidthProbe::passes_gbs(int passes) const {
  MKV_CHECK(passes > 0, "bandwidth probe: passes must be positive");
  const int threads = omp_get_max_threads();
  // Each thread reads one contiguous slice (a multiple of 64 floats).
  const std::size_t slice = (bytes_ / sizeof(float) / threads) / 64 * 64;
  std::vector<double> gbs;
  volatile float sink = 0.0f;
  for (int pass = 0; pass < passes + 1; ++pass) {  // the first pass warms up (TLB, clocks)
    float total = 0.0f;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += read_sum(data_ + omp_get_thread_num() * slice, slice);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink = sink + total;
    if (pass > 0) gbs.push_back(static_cast<double>(slice) * threads * sizeof(float) / s / 1e9);
  }
  return gbs;
}

PassSummary summarize_passes(std::vector<double> passes) {
  if (passes.empty()) return {};
  std::sort(passes.begin(), passes.end());
  return {passes.back(), passes[passes.size() / 2]};
}

}  // namespace mkv
