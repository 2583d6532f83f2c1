// Shared helpers for the ops tests: seeded Gaussian data, quantised rows, and runs under every
// kernel variant.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/ggml_type.h"
#include "ops/quant.h"

namespace mkv::test {

inline std::vector<float> gaussian(std::size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// rows x cols values encoded row by row in `type`.
inline std::vector<uint8_t> quantize_matrix(GgmlType type, const std::vector<float>& values, int64_t rows,
                                            int64_t cols) {
  const std::size_t row_bytes = ggml_row_bytes(type, cols);
  std::vector<uint8_t> out(row_bytes * rows);
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, values.data() + r * cols, out.data() + r * row_bytes, cols);
  return out;
}

inline const GgmlType kComputableTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                            GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                            GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// Sets the kernel variant for a scope and restores the one in use before.
class CpuVariantGuard {
 public:
  explicit CpuVariantGuard(CpuVariant v) : saved_(cpu_variant()) { set_cpu_variant(v); }
  ~CpuVariantGuard() { set_cpu_variant(saved_); }
  CpuVariantGuard(const CpuVariantGuard&) = delete;
  CpuVariantGuard& operator=(const CpuVariantGuard&) = delete;

 private:
  CpuVariant saved_;
};

// Calls fn(variant) under each kernel variant this build and host run (scalar first), each in
// a SCOPED_TRACE naming it. Variants the host lacks are skipped here; CpuVariants.* tests report
// them as skipped with the reason.
template <typename F>
void for_each_cpu_variant(F&& fn) {
  for (CpuVariant v : available_cpu_variants()) {
    SCOPED_TRACE("kernel variant " + std::string(cpu_variant_name(v)));
    CpuVariantGuard guard(v);
    fn(v);
  }
}

}  // namespace mkv::test
