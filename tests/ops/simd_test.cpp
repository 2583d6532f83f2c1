// The 8-lane shuffles the matrix and attention kernels rely on (simd.h), in whichever build
// (AVX2 or portable) the tests run.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mkv
