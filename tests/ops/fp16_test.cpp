// fp16 / bf16 conversion: exhaustive round trips and round-to-nearest-even cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/quant.h"

namespace mkv {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value of a half from its definition: (-1)^s * 2^(e-15) * 1.m, or 2^-14 * 0.m when e == 0.
double half_value(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 31;
  const int mantissa = h & 1023;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(Fp16, EveryHalfConvertsExactlyAndRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = fp16_to_f32(half);
    const int exponent = (h >> 10) & 31;
    if (exponent == 31 && (h & 1023) != 0) {  // NaN: stays NaN, converts back to a quiet NaN
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(f32_to_fp16(f), half | 0x0200) << h;
      continue;
    }
    if (exponent == 31) {
      ASSERT_TRUE(std::isinf(f)) << h;
      ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), half_value(half)) << h;
      ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << h;  // including -0
    }
    ASSERT_EQ(f32_to_fp16(f), half) << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  // Near 1: half spacing is 2^-10.
  EXPECT_EQ(f32_to_fp16(1.0f + 0x1p-11f), 0x3c00);                 // tie -> even (1.0)
  EXPECT_EQ(f32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);             // tie -> even (1 + 2^-9)
  EXPECT_EQ(f32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);      // above the tie -> up
  EXPECT_EQ(f32_to_fp16(-(1.0f + 0x1p-11f + 0x1p-20f)), 0xbc01);
  // Overflow: 65504 is the largest half; 65520 is the tie with 65536 and rounds to inf.
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  // Subnormals (unit 2^-24).
  EXPECT_EQ(f32_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_fp16(0x1p-25f), 0x0000);       // tie -> even (0)
  EXPECT_EQ(f32_to_fp16(0x1.8p-24f), 0x0002);     // 1.5 units: tie -> even (2)
  EXPECT_EQ(f32_to_fp16(0x1.8p-25f), 0x0001);     // 0.75 units -> 1
  EXPECT_EQ(f32_to_fp16(-0x1p-26f), 0x8000);      // underflow keeps the sign
  EXPECT_EQ(f32_to_fp16(0x1.ffcp-15f), 0x0400);   // largest subnormal + half unit: tie -> 2^-14
  EXPECT_EQ(f32_to_fp16(1e-30f), 0x0000);
  // Tie at the top of a binade carries into the exponent.
  EXPECT_EQ(f32_to_fp16(2.0f - 0x1p-12f), 0x4000);
  // A NaN stays a NaN with its sign.
  EXPECT_EQ(f32_to_fp16(float_of(0xffc00000u)) & 0xfe00, 0xfe00);
}

TEST(Bf16, ConvertsAndRoundsToNearestEven) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(float_of(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(f32_to_bf16(float_of(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x00018000u)), 0x0002);  // subnormal tie -> even
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  // NaNs stay NaNs (quiet), even when only low payload bits are set.
  const uint16_t nan = f32_to_bf16(float_of(0x7f800001u));
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  EXPECT_EQ(nan & 0x0040, 0x0040);
  // Every bf16 round-trips.
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    EXPECT_EQ(bits_of(f), h << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), h) << h;
    }
  }
}

}  // namespace
}  // namespace mkv
