// K-quant rows against 8-bit activations, compiled once per kernel variant (private to src/ops;
// included by matmul_int8_kernels.h): a row of 256-value super-blocks against 8-bit activation
// blocks of 32 values, eight per super-block. Each 32-value sub-block (Q4_K, Q5_K) or half of one
// (Q6_K) has its own scale, so each activation block meets exactly one weight sub-block:
//   Σ value·x ≈ Σ_j (d·scale_j)·d_x·Σ code·q_x − (dmin·min_j)·s_x   (s_x = d_x·Σ q_x).
// Layouts as block_decoders.h:
//   Q4_K (144 B): fp16 d, dmin; scales[12]; qs[128]; sub-block j = nibble (j & 1) of qs[32(j/2) ..].
//   Q5_K (176 B): as Q4_K with qh[32] before qs; bit j of qh[l] is the fifth bit of value l of j.
//   Q6_K (210 B): ql[128]; qh[64]; int8 scales[16]; fp16 d; value 128h + 32q + l has low bits =
//                 nibble (q >= 2) of ql[64h + 32(q & 1) + l], high bits (qh[32h + l] >> 2q) & 3,
//                 scale scales[8h + 2q + l/16], value = d·scale·(code6 − 32).
// MKV_SIMD >= 2 sums codes × activation codes exactly in integers (int8_dots.h: vpmaddubsw/vpmaddwd,
// or VNNI vpdpbusd), the portable code in plain C++: they differ only in float accumulation order.
#pragma once

#include "ops/block_decoders.h"
#include "ops/int8_dots.h"
#include "ops/matmul_int8.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

using decoders::k_scales_mins;
using int8_dots::fp16_at;

// The d and s fields of one token's activation blocks as consecutive floats (d[b] = x[b].d), which
// the K-quant kernels read 8 at a time; the portable kernels read the blocks instead.
struct ActScales {
  const float* d;
  const float* s;
};

constexpr std::size_t kQ4KBytes = decoders::Q4_K::kBlockBytes, kQ5KBytes = decoders::Q5_K::kBlockBytes,
                      kQ6KBytes = decoders::Q6_K::kBlockBytes;

// Asks for the super-block after the next few (one prefetch per cache line of this one).
inline void prefetch_block(const uint8_t* w, std::size_t bytes) {
  for (std::size_t offset = 0; offset < bytes; offset += 64) simd::prefetch_stream_ahead(w + offset);
}

#if MKV_SIMD >= 2

using int8_dots::dot_s8;
using int8_dots::dot_u8;
using int8_dots::hsum;
using int8_dots::load32;

// Q4_K and Q5_K: sub-block j pairs with activation block j; its codes are nibble (j & 1) of the
// 32 bytes qs[32(j/2) ..] (| the fifth bit for Q5_K). The 8 factors d·scale_j·d_x and the mins
// term Σ dmin·min_j·s_x are vectors over j, once per super-block, from the activation blocks'
// d and s gathered into consecutive floats (act.d, act.s: one load each per super-block).
template <bool kHighBits>
float k45_row_dot(const uint8_t* w, const ActScales& act, const ActBlockQ8* x, int64_t n_super) {
  constexpr std::size_t kBytes = kHighBits ? kQ5KBytes : kQ4KBytes;
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 min_acc = _mm256_setzero_ps();  // Σ (dmin·min_j)·s_x, lane j
  for (int64_t s = 0; s < n_super; ++s, w += kBytes, x += 8) {
    prefetch_block(w, kBytes);
    const decoders::KScalesMins sm = k_scales_mins(w + 4);
    const __m128i scales_mins = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&sm));  // scales, then mins
    const __m256 scales = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(scales_mins));
    const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(scales_mins, 8)));
    alignas(32) float factor[8];  // d·scale_j·d_x of sub-block j
    _mm256_store_ps(factor, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(fp16_at(w)), scales), _mm256_loadu_ps(act.d + 8 * s)));
    min_acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(fp16_at(w + 2)), mins), _mm256_loadu_ps(act.s + 8 * s), min_acc);
    const uint8_t* qs = w + (kHighBits ? 48 : 16);
    [[maybe_unused]] const __m256i qh = kHighBits ? load32(w + 16) : __m256i{};
    for (int pair = 0; pair < 4; ++pair) {
      const __m256i bytes = load32(qs + 32 * pair);
      const __m256i nibbles[2] = {_mm256_and_si256(bytes, low_mask),
                                  _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_mask)};
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * pair + half;
        __m256i code = nibbles[half];
        if constexpr (kHighBits) {
          const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << j));
          const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
          code = _mm256_or_si256(code, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
        }
        acc[half] = _mm256_fmadd_ps(_mm256_broadcast_ss(&factor[j]), dot_u8(code, load32(x[j].q)), acc[half]);
      }
    }
  }
  return hsum(_mm256_add_ps(acc[0], acc[1])) - hsum(min_acc);
}

float q6k_row_dot(const uint8_t* w, const ActScales& act, const ActBlockQ8* x, int64_t n_super) {
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t s = 0; s < n_super; ++s, w += kQ6KBytes, x += 8) {
    prefetch_block(w, kQ6KBytes);
    // Activation block k = 4h + q uses scales 2k (its values 0-15) and 2k + 1 (values 16-31):
    // factors d·scale·d_x for all 8 blocks at once, even and odd scales apart.
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 192));
    const __m128i even_odd = _mm_shuffle_epi8(scales, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    const __m256 d_x = _mm256_mul_ps(_mm256_set1_ps(fp16_at(w + 208)), _mm256_loadu_ps(act.d + 8 * s));
    alignas(32) float factor[2][8];  // [values 0-15 | values 16-31][block]
    _mm256_store_ps(factor[0], _mm256_mul_ps(d_x, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(even_odd))));
    _mm256_store_ps(factor[1], _mm256_mul_ps(d_x, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(even_odd, 8)))));
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 4; ++q) {
        const int k = 4 * h + q;
        // int32 lanes 0-3 hold values 0-15, lanes 4-7 values 16-31.
        const __m256 step = _mm256_set_m128(_mm_broadcast_ss(&factor[1][k]), _mm_broadcast_ss(&factor[0][k]));
        acc[q & 1] = _mm256_fmadd_ps(step, dot_s8(decoders::q6k_signed_codes(w, h, q), load32(x[k].q)), acc[q & 1]);
      }
  }
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

#else  // portable

template <bool kHighBits>
float k45_row_dot(const uint8_t* w, const ActScales&, const ActBlockQ8* x, int64_t n_super) {
  constexpr std::size_t kBytes = kHighBits ? kQ5KBytes : kQ4KBytes;
  float sum = 0.0f, offset = 0.0f;
  for (int64_t s = 0; s < n_super; ++s, w += kBytes, x += 8) {
    prefetch_block(w, kBytes);
    const float d = fp16_at(w), dmin = fp16_at(w + 2);
    const decoders::KScalesMins sm = k_scales_mins(w + 4);
    const uint8_t* qh = w + 16;
    const uint8_t* qs = w + (kHighBits ? 48 : 16);
    for (int j = 0; j < 8; ++j) {
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) {
        int code = (qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 0xf;
        if constexpr (kHighBits) code |= ((qh[l] >> j) & 1) << 4;
        dot += code * x[j].q[l];
      }
      sum += d * static_cast<float>(sm.scale[j]) * x[j].d * static_cast<float>(dot);
      offset -= dmin * static_cast<float>(sm.min[j]) * x[j].s;
    }
  }
  return sum + offset;
}

float q6k_row_dot(const uint8_t* w, const ActScales&, const ActBlockQ8* x, int64_t n_super) {
  float sum = 0.0f;
  for (int64_t s = 0; s < n_super; ++s, w += kQ6KBytes, x += 8) {
    prefetch_block(w, kQ6KBytes);
    const auto* scales = reinterpret_cast<const int8_t*>(w + 192);
    const float d = fp16_at(w + 208);
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 4; ++q) {
        const ActBlockQ8& xb = x[4 * h + q];
        int32_t dot[2] = {0, 0};  // values 0-15, 16-31
        for (int l = 0; l < 32; ++l) {
          const int low = (w[64 * h + 32 * (q & 1) + l] >> (4 * (q >= 2))) & 0xf;
          const int high = (w[128 + 32 * h + l] >> (2 * q)) & 3;
          dot[l / 16] += ((low | (high << 4)) - 32) * xb.q[l];
        }
        sum += d * xb.d *
               (static_cast<float>(scales[8 * h + 2 * q]) * static_cast<float>(dot[0]) +
                static_cast<float>(scales[8 * h + 2 * q + 1]) * static_cast<float>(dot[1]));
      }
  }
  return sum;
}

#endif

// w: one row of n_super super-blocks (ggml layout); x: its 8·n_super activation blocks, act their
// scales.
float q4_k_row_dot(const uint8_t* w, const ActScales& act, const ActBlockQ8* x, int64_t n_super) {
  return k45_row_dot<false>(w, act, x, n_super);
}
float q5_k_row_dot(const uint8_t* w, const ActScales& act, const ActBlockQ8* x, int64_t n_super) {
  return k45_row_dot<true>(w, act, x, n_super);
}
float q6_k_row_dot(const uint8_t* w, const ActScales& act, const ActBlockQ8* x, int64_t n_super) {
  return q6k_row_dot(w, act, x, n_super);
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
