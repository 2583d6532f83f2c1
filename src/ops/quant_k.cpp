// Reference quantisers for the 256-value K formats Q4_K, Q5_K, Q6_K (layouts in block_decoders.h).
// Per sub-block a min/max (Q4_K, Q5_K) or abs-max (Q6_K) scale, then the sub-block scales are
// themselves quantised against one fp16 super-scale.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "ops/half.h"
#include "ops/quantizers.h"

namespace mkv::quantizers {
namespace {

constexpr int kSuperBlock = 256;

float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Packs eight 6-bit (scale, min) pairs into 12 bytes; inverse of decoders::k_scales_mins.
void pack_k_scales(const int* scales, const int* mins, uint8_t* out) {
  std::memset(out, 0, 12);
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(scales[j]);
    out[j + 4] = static_cast<uint8_t>(mins[j]);
  }
  for (int j = 4; j < 8; ++j) {
    out[j + 4] = static_cast<uint8_t>((scales[j] & 0xf) | ((mins[j] & 0xf) << 4));
    out[j - 4] |= static_cast<uint8_t>((scales[j] >> 4) << 6);
    out[j] |= static_cast<uint8_t>((mins[j] >> 4) << 6);
  }
}

// Q4_K (bits 4) and Q5_K (bits 5): 8 sub-blocks of 32, value = (d*scale_j)*code - dmin*min_j with
// 6-bit scale_j, min_j. Each sub-block covers [min(0, lo), hi] of its values.
void quantize_k_affine(const float* x, int bits, uint8_t* block) {
  constexpr int kSub = 32;
  const int max_code = (1 << bits) - 1;
  std::array<float, 8> step{}, offset{};  // wanted per sub-block step and (non-negative) offset
  for (int j = 0; j < 8; ++j) {
    const auto [lo, hi] = std::minmax_element(x + kSub * j, x + kSub * (j + 1));
    offset[j] = -std::min(*lo, 0.0f);
    step[j] = (*hi + offset[j]) / static_cast<float>(max_code);
  }
  const uint16_t d_half = f32_to_fp16_inline(*std::max_element(step.begin(), step.end()) / 63.0f);
  const uint16_t dmin_half = f32_to_fp16_inline(*std::max_element(offset.begin(), offset.end()) / 63.0f);
  const float d = fp16_to_f32_inline(d_half), dmin = fp16_to_f32_inline(dmin_half);

  std::array<int, 8> scales{}, mins{};
  for (int j = 0; j < 8; ++j) {
    mins[j] = round_clamp(std::ceil(offset[j] * inverse(dmin)), 0, 63);  // never shift below lo
    const float needed_step = (step[j] * static_cast<float>(max_code) - offset[j] +
                               dmin * static_cast<float>(mins[j])) / static_cast<float>(max_code);
    scales[j] = round_clamp(std::ceil(needed_step * inverse(d)), 0, 63);  // cover up to hi
  }

  store_u16(block, d_half);
  store_u16(block + 2, dmin_half);
  pack_k_scales(scales.data(), mins.data(), block + 4);
  uint8_t* qh = block + 16;  // Q5_K only
  uint8_t* qs = block + (bits == 5 ? 48 : 16);
  std::memset(bits == 5 ? qh : qs, 0, bits == 5 ? 32 + 128 : 128);
  for (int e = 0; e < kSuperBlock; ++e) {
    const int j = e / kSub, l = e % kSub;
    const float sub_step = d * static_cast<float>(scales[j]);
    const float sub_offset = dmin * static_cast<float>(mins[j]);
    const int code = round_clamp((x[e] + sub_offset) * inverse(sub_step), 0, max_code);
    qs[32 * (j / 2) + l] |= static_cast<uint8_t>((code & 0xf) << (4 * (j & 1)));
    if (bits == 5) qh[l] |= static_cast<uint8_t>((code >> 4) << j);
  }
}

}  // namespace

void q4_k(const float* x, uint8_t* block) { quantize_k_affine(x, 4, block); }
void q5_k(const float* x, uint8_t* block) { quantize_k_affine(x, 5, block); }

// Q6_K: 16 sub-blocks of 16, value = (d*scale_j)*(code - 32), int8 scale_j.
void q6_k(const float* x, uint8_t* block) {
  constexpr int kSub = 16;
  std::array<float, 16> step{};
  for (int j = 0; j < 16; ++j) step[j] = best_symmetric_scale(x + kSub * j, kSub, -32, 31, false);
  float max_step = 0.0f;
  for (float s : step) max_step = std::max(max_step, std::fabs(s));
  const uint16_t d_half = f32_to_fp16_inline(max_step / 127.0f);
  const float d = fp16_to_f32_inline(d_half);

  uint8_t* ql = block;
  uint8_t* qh = block + 128;
  auto* scales = reinterpret_cast<int8_t*>(block + 192);
  std::memset(block, 0, 192);
  for (int j = 0; j < 16; ++j) scales[j] = static_cast<int8_t>(round_clamp(step[j] * inverse(d), -127, 127));
  for (int e = 0; e < kSuperBlock; ++e) {
    const float sub_step = d * static_cast<float>(scales[e / kSub]);
    const int code = round_clamp(x[e] * inverse(sub_step), -32, 31) + 32;
    const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
    ql[64 * half + 32 * (quarter & 1) + l] |= static_cast<uint8_t>((code & 0xf) << (quarter >= 2 ? 4 : 0));
    qh[32 * half + l] |= static_cast<uint8_t>((code >> 4) << (2 * quarter));
  }
  store_u16(block + 208, d_half);
}

}  // namespace mkv::quantizers
