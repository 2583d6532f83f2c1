// The 8-lane shuffles and conversions the matrix and attention kernels rely on (simd.h), in
// whichever build (AVX2 or portable) the tests run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/quant.h"
#include "ops/simd.h"

namespace mkv {
namespace {

TEST(Simd, Transpose8SwapsRowsAndLanes) {
  simd::F8 rows[8];
  float values[8];
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) values[j] = static_cast<float>(10 * i + j);
    rows[i] = simd::f8_load(values);
  }
  simd::transpose8(rows);
  for (int i = 0; i < 8; ++i) {
    simd::f8_store(values, rows[i]);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(values[j], static_cast<float>(10 * j + i)) << "row " << i << " lane " << j;
  }
}

TEST(Simd, Hsum8PutsEachVectorsSumInItsLane) {
  simd::F8 rows[8];
  float values[8];
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) values[j] = static_cast<float>((i + 1) * (j + 1));
    rows[i] = simd::f8_load(values);
  }
  simd::f8_store(values, simd::hsum8(rows));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(values[i], 36.0f * (i + 1));  // (i+1) * (1+...+8)
}

// f8_store_fp16 / f8_store_bf16 (the rounding of Fast precision's half activations) give the bits
// of the scalar conversions (round to nearest even, NaNs quiet, overflow to inf) for every value.
TEST(Simd, HalfStoresRoundLikeTheScalarConversions) {
  auto from_bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 1e9f, -1e-9f, 0x1p-24f, 0x1p-25f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(), from_bits(0x7f800001u),  // signalling NaN
                               from_bits(0xff812345u), from_bits(0x3f808000u),  // bf16 tie, even: rounds down
                               from_bits(0x3f818000u), 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f,
                               std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  while (values.size() % 8 != 0 || values.size() < 4096) values.push_back(from_bits(bits(rng)));
  for (std::size_t i = 0; i < values.size(); i += 8) {
    uint16_t fp16[8], bf16[8];
    simd::f8_store_fp16(fp16, simd::f8_load(values.data() + i));
    simd::f8_store_bf16(bf16, simd::f8_load(values.data() + i));
    for (int k = 0; k < 8; ++k) {
      ASSERT_EQ(fp16[k], f32_to_fp16(values[i + k])) << values[i + k];
      ASSERT_EQ(bf16[k], f32_to_bf16(values[i + k])) << values[i + k];
    }
  }
}

}  // namespace
}  // namespace mkv
