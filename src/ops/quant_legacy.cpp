// Reference quantisers for the 32-value legacy formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1
// (layouts in block_decoders.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/half.h"
#include "ops/quantizers.h"

namespace mkv::quantizers {
namespace {

constexpr int kLegacyBlock = 32;

// Inverse of a stored scale, 0 for a zero scale (an all-zero block encodes as code 0 everywhere).
float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Packs 32 codes of 4 or 5 bits: value j's low nibble in qs[j] (j < 16) or qs[j-16] >> 4;
// with qh non-null, bit 4 of code j goes to bit j of the little-endian uint32 qh.
void pack_legacy_codes(const int* codes, uint8_t* qs, uint8_t* qh) {
  uint32_t high_bits = 0;
  for (int j = 0; j < kLegacyBlock / 2; ++j)
    qs[j] = static_cast<uint8_t>((codes[j] & 0xf) | ((codes[j + 16] & 0xf) << 4));
  for (int j = 0; j < kLegacyBlock; ++j) high_bits |= static_cast<uint32_t>((codes[j] >> 4) & 1) << j;
  if (qh) std::memcpy(qh, &high_bits, 4);
}

// Symmetric 4/5-bit block { fp16 d; [qh[4]]; qs[16] }, value = (code - 2^(bits-1)) * d.
void quantize_symmetric(const float* x, int bits, uint8_t* block) {
  const int offset = 1 << (bits - 1);
  const uint16_t d_half = f32_to_fp16_inline(best_symmetric_scale(x, kLegacyBlock, -offset, offset - 1, true));
  const float id = inverse(fp16_to_f32_inline(d_half));
  int codes[kLegacyBlock];
  for (int j = 0; j < kLegacyBlock; ++j) codes[j] = round_clamp(x[j] * id, -offset, offset - 1) + offset;
  store_u16(block, d_half);
  pack_legacy_codes(codes, block + (bits == 5 ? 6 : 2), bits == 5 ? block + 2 : nullptr);
}

// Affine 4/5-bit block { fp16 d, m; [qh[4]]; qs[16] }, value = code * d + m, m = block minimum.
void quantize_affine(const float* x, int bits, uint8_t* block) {
  const int max_code = (1 << bits) - 1;
  const auto [lo, hi] = std::minmax_element(x, x + kLegacyBlock);
  const uint16_t m_half = f32_to_fp16_inline(*lo);
  const float m = fp16_to_f32_inline(m_half);
  const uint16_t d_half = f32_to_fp16_inline((*hi - m) / static_cast<float>(max_code));
  const float id = inverse(fp16_to_f32_inline(d_half));
  int codes[kLegacyBlock];
  for (int j = 0; j < kLegacyBlock; ++j) codes[j] = round_clamp((x[j] - m) * id, 0, max_code);
  store_u16(block, d_half);
  store_u16(block + 2, m_half);
  pack_legacy_codes(codes, block + (bits == 5 ? 8 : 4), bits == 5 ? block + 4 : nullptr);
}

}  // namespace

int round_clamp(float v, int lo, int hi) {
  return static_cast<int>(std::clamp(std::nearbyint(v), static_cast<float>(lo), static_cast<float>(hi)));
}

float best_symmetric_scale(const float* x, int n, int min_code, int max_code, bool stored_as_fp16) {
  // Base candidate (as ggml): the value of largest magnitude maps to min_code, the end with more
  // levels (e.g. -8 for 4 bits), or to max_code when the code range is symmetric.
  float extreme = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > std::fabs(extreme)) extreme = x[j];
  const float base = min_code == -max_code ? std::fabs(extreme) / static_cast<float>(max_code)
                                           : extreme / static_cast<float>(min_code);
  constexpr int kCandidates = 16;
  float best = 0.0f, best_error = INFINITY;
  for (int k = 0; k < kCandidates; ++k) {
    float d = base * (1.0f - 0.015f * static_cast<float>(k));
    if (stored_as_fp16) d = fp16_to_f32_inline(f32_to_fp16_inline(d));
    const float id = inverse(d);
    float error = 0.0f;
    for (int j = 0; j < n; ++j) {
      const float e = x[j] - d * static_cast<float>(round_clamp(x[j] * id, min_code, max_code));
      error += e * e;
    }
    if (error < best_error) best = d, best_error = error;
  }
  return best;
}

// Q8_0 { fp16 d; int8 q[32] }, value = q * d, d = max|x| / 127 (with 255 levels a smaller scale
// never pays for clipping the extreme value).
void q8_0(const float* x, uint8_t* block) {
  float amax = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const uint16_t d_half = f32_to_fp16_inline(amax / 127.0f);
  const float id = inverse(fp16_to_f32_inline(d_half));
  store_u16(block, d_half);
  for (int j = 0; j < kLegacyBlock; ++j)
    block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(round_clamp(x[j] * id, -127, 127)));
}

void q4_0(const float* x, uint8_t* block) { quantize_symmetric(x, 4, block); }
void q5_0(const float* x, uint8_t* block) { quantize_symmetric(x, 5, block); }
void q4_1(const float* x, uint8_t* block) { quantize_affine(x, 4, block); }
void q5_1(const float* x, uint8_t* block) { quantize_affine(x, 5, block); }

}  // namespace mkv::quantizers
