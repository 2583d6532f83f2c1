// K-quant rows against 8-bit activations, compiled once per kernel variant (private to src/ops;
// included by matmul_int8_kernels.h): a row of 256-value super-blocks against 8-bit activation
// blocks of 32 values, eight per super-block, all eight with the same scale d_x
// (activation_group_blocks). Each 32-value sub-block (Q4_K, Q5_K) or half of one (Q6_K) has its
// own integer scale, so each activation block meets exactly one weight sub-block:
//   Σ value·x ≈ d·d_x·Σ_j scale_j·Σ code·q_x − Σ_j (dmin·min_j)·s_x   (s_x = d_x·Σ q_x),
// and the sum over j is an integer: one float step per super-block.
// Layouts as block_decoders.h:
//   Q4_K (144 B): fp16 d, dmin; scales[12]; qs[128]; sub-block j = nibble (j & 1) of qs[32(j/2) ..].
//   Q5_K (176 B): as Q4_K with qh[32] before qs; bit j of qh[l] is the fifth bit of value l of j.
//   Q6_K (210 B): ql[128]; qh[64]; int8 scales[16]; fp16 d; value 128h + 32q + l has low bits =
//                 nibble (q >= 2) of ql[64h + 32(q & 1) + l], high bits (qh[32h + l] >> 2q) & 3,
//                 scale scales[8h + 2q + l/16], value = d·scale·(code6 − 32).
// MKV_SIMD >= 2 sums codes × activation codes × scales exactly in integers (vpmaddubsw, then
// the scales with vpmaddwd + vpaddd, or AVX-512 VNNI's vpdpwssd), the portable code in plain
// C++: they differ only in float accumulation order (AVX2 and AVX-512 not at all).
#pragma once

#include "ops/block_decoders.h"
#include "ops/int8_dots.h"
#include "ops/matmul_int8.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

using decoders::k_scales_mins;
using int8_dots::fp16_at;

// One token's activation blocks as the SIMD kernels read them (Int8Activations' consecutive
// copies): the codes of a super-block's 8 blocks as 256 consecutive bytes (a 512-bit load takes
// two blocks), the d and s fields as consecutive floats (d[b] = x[b].d), 8 at a time, and the
// Q6_K half-block sums. The portable kernels read the blocks instead.
struct KActivations {
  const int8_t* codes;
  const float* d;
  const float* s;
  const int16_t* half_sums;  // Q6_K: Σ q over each 16 values (Int8Activations::half_sums), else null
};

constexpr std::size_t kQ4KBytes = decoders::Q4_K::kBlockBytes, kQ5KBytes = decoders::Q5_K::kBlockBytes,
                      kQ6KBytes = decoders::Q6_K::kBlockBytes;

// Asks for the super-block after the next few (one prefetch per cache line of this one).
inline void prefetch_block(const uint8_t* w, std::size_t bytes) {
  for (std::size_t offset = 0; offset < bytes; offset += 64) simd::prefetch_stream_ahead(w + offset);
}

#if MKV_SIMD >= 2

using int8_dots::add_pair_products;
using int8_dots::hsum;
using int8_dots::load32;

// decoders::k_scales_mins in a register: bytes 0-7 the 8 scales, 8-15 the 8 mins, from the 12
// packed bytes at p. The AVX2 variant loads the scalar decode's result, which GCC builds there
// in general registers and moves into the vector register. In the AVX-512 variant GCC compiled
// the same code as two 8-byte stores and a 16-byte load of them, which the store buffer cannot
// forward; there the lanes are computed with vector shifts (reading 16 bytes: p points into a block
// with at least 4 more after them), per 32-bit lane: scales 0-3 = u0 & 0x3f.., scales 4-7 = (u2 &
// 0x0f..) | ((u0 >> 6) & 0x03..) << 4, mins 0-3 = u1 & 0x3f.., mins 4-7 = ((u2 >> 4) & 0x0f..) |
// ((u1 >> 6) & 0x03..) << 4.
#if MKV_SIMD >= 3
inline __m128i k_scales_mins_vector(const uint8_t* p) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)), _mm_setr_epi32(0, 6, 0, 6)),
                                     _mm_setr_epi32(0, 0x03030303, 0, 0x03030303));
  return _mm_or_si128(low, _mm_slli_epi32(high, 4));
}
#else
inline __m128i k_scales_mins_vector(const uint8_t* p) {
  const decoders::KScalesMins sm = k_scales_mins(p);
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(&sm));
}
#endif

// The vpshufb index (bytes 2i, 2i + 1) that copies int16 lane i of a 128-bit lane into every
// int16 lane of it: how the kernels below spread one scale over its sub-block's products.
constexpr short int16_lane_index(int i) { return static_cast<short>(0x0100 * (2 * i + 1) + 2 * i); }

// Q4_K and Q5_K: sub-block j pairs with activation block j; its codes are nibble (j & 1) of the
// 32 bytes qs[32(j/2) ..] (| the fifth bit for Q5_K). The activation blocks of a super-block share
// one scale d_x (activation_group_blocks), so the super-block's products sum in integers: int16
// pairs (vpmaddubsw: |2·31·127| < 2^15) times scale_j into int32 lanes (add_pair_products: at
// most 8·2·7874·63 < 2^23 per lane), then one float step d·d_x·Σ. The mins term Σ dmin·min_j·s_x is a
// vector over j, from the blocks' s gathered into consecutive floats (act.s).
//
// k45_super_block_sum: that integer sum over one super-block, per int32 lane (Σ_j scale_j·pairs of
// code·q_x of sub-block j). scales_mins: the super-block's 8 scales then 8 mins (bytes); qs,
// qh_bytes: its codes and (Q5_K) their fifth bits; xq: the 256 activation codes it meets.
#if MKV_SIMD >= 3
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593: see f16x16_load
// low in the low 256 bits, high in the high ones.
inline __m512i halves(__m256i low, __m256i high) { return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1); }
inline __m256i add_halves(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

// In 512-bit registers: an even sub-block j in the low 256 bits and j + 1 in the high ones, so
// that one vpmaddubsw, one vpshufb and one vpdpwssd serve two sub-blocks. The halves added at the
// end give the 256-bit loop's 8 lanes exactly (integer sums): results bitwise the AVX2 variant's.
template <bool kHighBits>
__m256i k45_super_block_sum(__m128i scales_mins, const uint8_t* qs, const uint8_t* qh_bytes, const int8_t* xq) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  // int16 lane j of each 128-bit lane = scale_j.
  const __m512i scales = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(scales_mins));
  // Per int16 lane, 0 in the low half (low nibbles: sub-block j) and 4 in the high (j + 1).
  const __m512i nibble_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  const auto int16s = [](int v) { return _mm256_set1_epi16(static_cast<short>(v)); };
  const auto scale_index = [](int i) { return _mm256_set1_epi16(int16_lane_index(i)); };
  [[maybe_unused]] const __m512i high_bits = kHighBits ? _mm512_broadcast_i64x4(load32(qh_bytes)) : __m512i{};
  __m512i sum = _mm512_setzero_si512();
  for (int j = 0; j < 8; j += 2) {
    const __m512i bytes = _mm512_broadcast_i64x4(load32(qs + 16 * j));
    __m512i code = _mm512_and_si512(_mm512_srlv_epi16(bytes, nibble_shift), low_mask);
    if constexpr (kHighBits) {
      // Bit j (low half) or j + 1 (high half) of each qh byte moved to bit 4, as the 256-bit loop
      // below does (16-bit shifts by at most 4).
      const __m512i moved = j < 4 ? _mm512_sllv_epi16(high_bits, halves(int16s(4 - j), int16s(3 - j)))
                                  : _mm512_srlv_epi16(high_bits, halves(int16s(j - 4), int16s(j - 3)));
      code = _mm512_or_si512(code, _mm512_and_si512(moved, _mm512_set1_epi8(0x10)));
    }
    // scale_j in every int16 lane of the low half, scale_{j+1} in the high.
    const __m512i scale = _mm512_shuffle_epi8(scales, halves(scale_index(j), scale_index(j + 1)));
    sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(code, _mm512_loadu_si512(xq + 32 * j)), scale);
  }
  return add_halves(sum);
}
#pragma GCC diagnostic pop
#else
template <bool kHighBits>
__m256i k45_super_block_sum(__m128i scales_mins, const uint8_t* qs, const uint8_t* qh_bytes, const int8_t* xq) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  // int16 lane j (of each 128-bit half) = scale_j.
  const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
  [[maybe_unused]] const __m256i qh = kHighBits ? load32(qh_bytes) : __m256i{};
  __m256i sum = _mm256_setzero_si256();
  for (int pair = 0; pair < 4; ++pair) {
    const __m256i bytes = load32(qs + 32 * pair);
    const __m256i nibbles[2] = {_mm256_and_si256(bytes, low_mask), _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_mask)};
    for (int half = 0; half < 2; ++half) {
      const int j = 2 * pair + half;
      __m256i code = nibbles[half];
      if constexpr (kHighBits) {
        // Bit j of each qh byte moved to bit 4 (16-bit shifts by at most 4 keep each byte's bit 4
        // from the same byte), masked.
        const __m256i moved = j < 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
        code = _mm256_or_si256(code, _mm256_and_si256(moved, _mm256_set1_epi8(0x10)));
      }
      // scale_j in every int16 lane of each half.
      const __m256i scale = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(int16_lane_index(j)));
      sum = add_pair_products(sum, _mm256_maddubs_epi16(code, load32(xq + 32 * j)), scale);
    }
  }
  return sum;
}
#endif

template <bool kHighBits>
float k45_row_dot(const uint8_t* w, const KActivations& act, const ActBlockQ8*, int64_t n_super) {
  constexpr std::size_t kBytes = kHighBits ? kQ5KBytes : kQ4KBytes;
  __m256 acc = _mm256_setzero_ps();      // Σ d·d_x·(integer sum), per lane
  __m256 min_acc = _mm256_setzero_ps();  // Σ (dmin·min_j)·s_x, lane j
  for (int64_t s = 0; s < n_super; ++s, w += kBytes) {
    prefetch_block(w, kBytes);
    const __m128i scales_mins = k_scales_mins_vector(w + 4);  // 8 scales, then 8 mins (bytes)
    const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(scales_mins, 8)));
    min_acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(fp16_at(w + 2)), mins), _mm256_loadu_ps(act.s + 8 * s), min_acc);
    const __m256i sum = k45_super_block_sum<kHighBits>(scales_mins, w + (kHighBits ? 48 : 16), w + 16, act.codes + 256 * s);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_at(w) * act.d[8 * s]), _mm256_cvtepi32_ps(sum), acc);
  }
  return hsum(_mm256_sub_ps(acc, min_acc));
}

// Q6_K: activation block k = 4h + q meets values 0-15 with scale 2k and 16-31 with scale 2k + 1,
// the int16 halves of its vpmaddubsw pairs. The unsigned codes c (0 .. 63) go into vpmaddubsw
// as they are (pairs at most 2·63·127 < 2^15), and the 32 of value = c − 32 comes off once per
// super-block: 32·Σ_i scale_i·Σ q_x over the 16 values of scale i (act.half_sums). Integer sums
// over the super-block as Q4_K (at most 8·2·16002·128 < 2^25 per lane), one float step d·d_x·Σ.
//
// q6k_super_block_sum: Σ_k of the scaled code·q_x pairs of block k, per int32 lane, for the
// super-block at w; scales: its 16 scales as int16; xq: the 256 activation codes it meets.
#if MKV_SIMD >= 3
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593: see f16x16_load
// In 512-bit registers, as k45_super_block_sum: block k = 4h + q (q even) in the low 256 bits and
// k + 1 in the high ones, whose low code bits are the 64 consecutive bytes ql[64h ..] (one nibble
// for both) and whose high bits are qh[32h ..] shifted by 2q and 2q + 2. Bitwise the 256-bit sums.
inline __m256i q6k_super_block_sum(const uint8_t* w, __m256i scales, const int8_t* xq) {
  // int16_lane_index(i) in each int16 of 64 bits.
  const auto index = [](int i) {
    return static_cast<long long>(0x0001000100010001ULL * static_cast<uint16_t>(int16_lane_index(i)));
  };
  __m512i sum = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {
    // Every 128-bit lane: scales 8h .. 8h + 7 as int16.
    const __m512i half_scales = _mm512_broadcast_i32x4(h ? _mm256_extracti128_si256(scales, 1) : _mm256_castsi256_si128(scales));
    const __m512i low_bytes = _mm512_loadu_si512(w + 64 * h);
    const __m512i high_bytes = _mm512_broadcast_i64x4(load32(w + 128 + 32 * h));
    for (int q = 0; q < 4; q += 2) {
      const int k = 4 * h + q;
      const __m512i low = _mm512_and_si512(q >= 2 ? _mm512_srli_epi16(low_bytes, 4) : low_bytes, _mm512_set1_epi8(0x0f));
      const __m512i shifts = halves(_mm256_set1_epi16(static_cast<short>(2 * q)), _mm256_set1_epi16(static_cast<short>(2 * q + 2)));
      const __m512i high = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(high_bytes, shifts), _mm512_set1_epi8(3)), 4);
      // 128-bit lanes 0-3: local scales 2q (values 0-15 of block k), 2q + 1, 2q + 2, 2q + 3 (of k + 1).
      const __m512i scale = _mm512_shuffle_epi8(half_scales, _mm512_set_epi64(index(2 * q + 3), index(2 * q + 3), index(2 * q + 2), index(2 * q + 2),
                                                                               index(2 * q + 1), index(2 * q + 1), index(2 * q), index(2 * q)));
      const __m512i activations = _mm512_loadu_si512(xq + 32 * k);
      sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(_mm512_or_si512(low, high), activations), scale);
    }
  }
  return add_halves(sum);
}
#pragma GCC diagnostic pop
#else
inline __m256i q6k_super_block_sum(const uint8_t* w, __m256i scales, const int8_t* xq) {
  __m256i sum = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    // Both 128-bit halves: scales 8h .. 8h + 7 as int16.
    const __m256i half_scales = h ? _mm256_permute2x128_si256(scales, scales, 0x11)
                                  : _mm256_permute2x128_si256(scales, scales, 0x00);
    for (int q = 0; q < 4; ++q) {
      const int k = 4 * h + q;
      // int16 lanes 0-7: scale 2k (local 2q), lanes 8-15: scale 2k + 1.
      const __m256i scale = _mm256_shuffle_epi8(
          half_scales, _mm256_setr_m128i(_mm_set1_epi16(int16_lane_index(2 * q)), _mm_set1_epi16(int16_lane_index(2 * q + 1))));
      sum = add_pair_products(sum, _mm256_maddubs_epi16(decoders::q6k_codes(w, h, q), load32(xq + 32 * k)), scale);
    }
  }
  return sum;
}
#endif

float q6k_row_dot(const uint8_t* w, const KActivations& act, const ActBlockQ8*, int64_t n_super) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t s = 0; s < n_super; ++s, w += kQ6KBytes) {
    prefetch_block(w, kQ6KBytes);
    const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 192)));
    // Σ_i scale_i·(Σ q_x of the values of scale i), i = 0 .. 15, in pairs.
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales, load32(act.half_sums + 16 * s)), 5);
    const __m256i sum = _mm256_sub_epi32(q6k_super_block_sum(w, scales, act.codes + 256 * s), offset);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_at(w + 208) * act.d[8 * s]), _mm256_cvtepi32_ps(sum), acc);
  }
  return hsum(acc);
}

#else  // portable

template <bool kHighBits>
float k45_row_dot(const uint8_t* w, const KActivations&, const ActBlockQ8* x, int64_t n_super) {
  constexpr std::size_t kBytes = kHighBits ? kQ5KBytes : kQ4KBytes;
  float sum = 0.0f, offset = 0.0f;
  for (int64_t s = 0; s < n_super; ++s, w += kBytes, x += 8) {
    prefetch_block(w, kBytes);
    const float d = fp16_at(w), dmin = fp16_at(w + 2);
    const decoders::KScalesMins sm = k_scales_mins(w + 4);
    const uint8_t* qh = w + 16;
    const uint8_t* qs = w + (kHighBits ? 48 : 16);
    int32_t super_dot = 0;  // Σ_j scale_j·Σ code·q_x (the blocks share x[0].d)
    for (int j = 0; j < 8; ++j) {
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) {
        int code = (qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 0xf;
        if constexpr (kHighBits) code |= ((qh[l] >> j) & 1) << 4;
        dot += code * x[j].q[l];
      }
      super_dot += static_cast<int32_t>(sm.scale[j]) * dot;
      offset -= dmin * static_cast<float>(sm.min[j]) * x[j].s;
    }
    sum += d * x[0].d * static_cast<float>(super_dot);
  }
  return sum + offset;
}

float q6k_row_dot(const uint8_t* w, const KActivations&, const ActBlockQ8* x, int64_t n_super) {
  float sum = 0.0f;
  for (int64_t s = 0; s < n_super; ++s, w += kQ6KBytes, x += 8) {
    prefetch_block(w, kQ6KBytes);
    const auto* scales = reinterpret_cast<const int8_t*>(w + 192);
    int32_t super_dot = 0;  // Σ scale·Σ code·q_x (the blocks share x[0].d)
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 4; ++q) {
        const ActBlockQ8& xb = x[4 * h + q];
        int32_t dot[2] = {0, 0};  // values 0-15, 16-31
        for (int l = 0; l < 32; ++l) {
          const int low = (w[64 * h + 32 * (q & 1) + l] >> (4 * (q >= 2))) & 0xf;
          const int high = (w[128 + 32 * h + l] >> (2 * q)) & 3;
          dot[l / 16] += ((low | (high << 4)) - 32) * xb.q[l];
        }
        super_dot += scales[8 * h + 2 * q] * dot[0] + scales[8 * h + 2 * q + 1] * dot[1];
      }
    sum += fp16_at(w + 208) * x[0].d * static_cast<float>(super_dot);
  }
  return sum;
}

#endif

// w: one row of n_super super-blocks (ggml layout); x: its 8·n_super activation blocks, act their
// scales.
float q4_k_row_dot(const uint8_t* w, const KActivations& act, const ActBlockQ8* x, int64_t n_super) {
  return k45_row_dot<false>(w, act, x, n_super);
}
float q5_k_row_dot(const uint8_t* w, const KActivations& act, const ActBlockQ8* x, int64_t n_super) {
  return k45_row_dot<true>(w, act, x, n_super);
}
float q6_k_row_dot(const uint8_t* w, const KActivations& act, const ActBlockQ8* x, int64_t n_super) {
  return q6k_row_dot(w, act, x, n_super);
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
