// dequantize_row against values computed here from each format's definition (ggml-common.h):
// blocks are filled with seeded random bytes (so every scale, min and high bit varies), the fp16
// fields are then set to chosen finite scales, and each value is derived element by element.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "ops/ggml_type.h"
#include "ops/quant.h"

namespace mkv {
namespace {

constexpr int kBlocks = 3;

// Half-precision constants by bit pattern, so the test does not rely on f32_to_fp16.
struct Half {
  uint16_t bits;
  float value;
};
constexpr Half kScales[] = {{0x2e66, 0.0999755859375f}, {0xb800, -0.5f}, {0x3400, 0.25f}, {0x4200, 3.0f}};
constexpr Half kMins[] = {{0xbe00, -1.5f}, {0x2c00, 0.0625f}, {0x3c00, 1.0f}, {0x1400, 0.0009765625f}};

void put_half(uint8_t* p, Half h) {
  p[0] = static_cast<uint8_t>(h.bits & 0xff);
  p[1] = static_cast<uint8_t>(h.bits >> 8);
}

// Expected value i of one block, given its bytes and its block index (which picks the scales).
using BlockFormula = std::function<float(const uint8_t* block, int i)>;

struct Format {
  GgmlType type;
  int d_offset, m_offset;  // byte offsets of the fp16 scale and min (-1: none)
  BlockFormula value;
};

uint8_t nibble(const uint8_t* bytes, int index, bool high) { return high ? bytes[index] >> 4 : bytes[index] & 15; }
float f16_at(const uint8_t* p) { return fp16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }
uint32_t u32_at(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24); }

// Legacy 32-value blocks: value i < 16 is the low nibble of qs[i], value i >= 16 the high nibble
// of qs[i - 16]; the fifth bit is bit i of qh.
int legacy_code4(const uint8_t* qs, int i) { return nibble(qs, i % 16, i >= 16); }
int legacy_code5(const uint8_t* qh, const uint8_t* qs, int i) {
  return legacy_code4(qs, i) | static_cast<int>(((u32_at(qh) >> i) & 1) << 4);
}

// K-quant 6-bit scale/min j of 8 from 12 bytes (get_scale_min_k4).
void k_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K / Q5_K value i: sub-block j = i / 32 uses nibble j % 2 of qs[32 * (j / 2) + i % 32] and,
// for Q5_K, bit j of qh[i % 32].
float k_value(const uint8_t* b, int i, bool five_bits) {
  const int j = i / 32, l = i % 32;
  const uint8_t* qs = b + (five_bits ? 48 : 16);
  int code = nibble(qs, 32 * (j / 2) + l, j % 2 == 1);
  if (five_bits) code |= ((b[16 + l] >> j) & 1) << 4;
  int scale, min;
  k_scale_min(b + 4, j, &scale, &min);
  return f16_at(b) * static_cast<float>(scale) * static_cast<float>(code) - f16_at(b + 2) * static_cast<float>(min);
}

// Q6_K value i: half h = i / 128, quarter q = (i % 128) / 32, l = i % 32.
float q6k_value(const uint8_t* b, int i) {
  const int h = i / 128, q = (i % 128) / 32, l = i % 32;
  const int low = nibble(b, 64 * h + 32 * (q % 2) + l, q >= 2);
  const int high = (b[128 + 32 * h + l] >> (2 * q)) & 3;
  const auto scale = static_cast<int8_t>(b[192 + i / 16]);
  return f16_at(b + 208) * static_cast<float>(scale) * static_cast<float>((low | (high << 4)) - 32);
}

std::vector<Format> formats() {
  return {
      {GgmlType::Q8_0, 0, -1, [](const uint8_t* b, int i) { return static_cast<float>(static_cast<int8_t>(b[2 + i])) * f16_at(b); }},
      {GgmlType::Q4_0, 0, -1, [](const uint8_t* b, int i) { return static_cast<float>(legacy_code4(b + 2, i) - 8) * f16_at(b); }},
      {GgmlType::Q4_1, 0, 2, [](const uint8_t* b, int i) { return static_cast<float>(legacy_code4(b + 4, i)) * f16_at(b) + f16_at(b + 2); }},
      {GgmlType::Q5_0, 0, -1, [](const uint8_t* b, int i) { return static_cast<float>(legacy_code5(b + 2, b + 6, i) - 16) * f16_at(b); }},
      {GgmlType::Q5_1, 0, 2, [](const uint8_t* b, int i) { return static_cast<float>(legacy_code5(b + 4, b + 8, i)) * f16_at(b) + f16_at(b + 2); }},
      {GgmlType::Q4_K, 0, 2, [](const uint8_t* b, int i) { return k_value(b, i, false); }},
      {GgmlType::Q5_K, 0, 2, [](const uint8_t* b, int i) { return k_value(b, i, true); }},
      {GgmlType::Q6_K, 208, -1, q6k_value},
  };
}

class DequantizeFormat : public ::testing::TestWithParam<Format> {};

TEST_P(DequantizeFormat, MatchesTheFormatDefinition) {
  const Format& format = GetParam();
  const auto& info = ggml_type_info(format.type);
  std::mt19937 rng(1234 + static_cast<int>(format.type));
  std::vector<uint8_t> row(info.block_bytes * kBlocks);
  for (auto& byte : row) byte = static_cast<uint8_t>(rng());
  for (int b = 0; b < kBlocks; ++b) {
    uint8_t* block = row.data() + b * info.block_bytes;
    put_half(block + format.d_offset, kScales[b % 4]);
    if (format.m_offset >= 0) put_half(block + format.m_offset, kMins[b % 4]);
  }
  std::vector<float> values(static_cast<std::size_t>(info.block_size) * kBlocks);
  dequantize_row(format.type, row.data(), values.data(), static_cast<int64_t>(values.size()));
  for (int b = 0; b < kBlocks; ++b)
    for (int i = 0; i < info.block_size; ++i)
      ASSERT_EQ(values[b * info.block_size + i], format.value(row.data() + b * info.block_bytes, i))
          << info.name << " block " << b << " value " << i;
}

INSTANTIATE_TEST_SUITE_P(AllQuantTypes, DequantizeFormat, ::testing::ValuesIn(formats()),
                         [](const auto& info) { return std::string(ggml_type_info(info.param.type).name); });

TEST(Dequantize, HandBuiltQ4KBlockWithKnownScales) {
  // d = 0.5, dmin = 0.25; sub-block j has scale 2j + 1 (j < 4) or 40 + j, min j or 33 + j;
  // every code is 9 in sub-blocks 0..7 (nibbles 0x99), fifth bits none.
  uint8_t block[144] = {};
  put_half(block, {0x3800, 0.5f});
  put_half(block + 2, {0x3400, 0.25f});
  const int scales[8] = {1, 3, 5, 7, 44, 45, 46, 47};
  const int mins[8] = {0, 1, 2, 3, 37, 38, 39, 40};
  for (int j = 0; j < 4; ++j) {
    block[4 + j] = static_cast<uint8_t>(scales[j] | ((scales[j + 4] >> 4) << 6));
    block[8 + j] = static_cast<uint8_t>(mins[j] | ((mins[j + 4] >> 4) << 6));
    block[12 + j] = static_cast<uint8_t>((scales[j + 4] & 15) | ((mins[j + 4] & 15) << 4));
  }
  std::memset(block + 16, 0x99, 128);
  float values[256];
  dequantize_row(GgmlType::Q4_K, block, values, 256);
  for (int i = 0; i < 256; ++i) {
    const int j = i / 32;
    EXPECT_EQ(values[i], 0.5f * scales[j] * 9 - 0.25f * mins[j]) << i;
  }
}

TEST(Dequantize, FloatTypesIncludingShortTails) {
  const float f32[11] = {1.5f, -2.0f, 0.0f, 3.25f, -0.125f, 7.0f, 8.5f, -9.0f, 1e-3f, 42.0f, -0.5f};
  uint16_t f16[11], bf16[11];
  for (int i = 0; i < 11; ++i) {
    f16[i] = f32_to_fp16(f32[i]);
    bf16[i] = f32_to_bf16(f32[i]);
  }
  float out[11];
  dequantize_row(GgmlType::F32, f32, out, 11);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(out[i], f32[i]);
  dequantize_row(GgmlType::F16, f16, out, 11);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(out[i], fp16_to_f32(f16[i]));
  dequantize_row(GgmlType::BF16, bf16, out, 11);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(out[i], bf16_to_f32(bf16[i]));
}

TEST(Dequantize, RejectsPartialBlocks) {
  uint8_t block[34] = {};
  float out[32];
  EXPECT_THROW(dequantize_row(GgmlType::Q8_0, block, out, 16), std::exception);
  EXPECT_THROW(dequantize_row(GgmlType::Q2_K, block, out, 256), std::exception);
}

}  // namespace
}  // namespace mkv
