// Block decoders: one per computable GgmlType, shared by dequantize_row and the matmul kernels
// (private to src/ops). Layouts and value formulas follow ggml (ggml-common.h, ggml-quants.c
// dequantize_row_*); the arithmetic is done in the same order, so results are bit-exact.
// Invariant that keeps them bit-exact whether or not a compiler fuses a multiply and an add: every
// product below is exact in float (an fp16 scale has 11 significant bits, a 6/8-bit sub-scale and
// a code of at most 8 bits add up to at most 24), so only the final add/subtract rounds.
//
// A decoder is a struct with
//   kBlockSize   values per block (a multiple of 8; F32/F16/BF16 use 8-value "blocks")
//   kBlockBytes  bytes per block
//   decode(block, sink)  calls sink(group, F8 values) for each group of 8 consecutive values,
//                        group = 0 .. kBlockSize/8 - 1 (in order).
// The quantised decoders are also SubBlockScaled: every kSubBlock consecutive values share a
// scale and an offset, value = code × scale + offset, so that a dot product can sum code × x over
// a sub-block and apply the scale once (and the offset once, times the sub-block's sum of x):
//   kSubBlock                         values per scale (16 or 32; divides kBlockSize)
//   kHasOffset                        whether any offset can be non-zero (Q4_1, Q5_1, Q4_K, Q5_K)
//   sub_scales(block, scale, offset)  fills kBlockSize / kSubBlock scales and offsets
//   decode_codes(block, sink)         like decode, with the codes as floats (small integers)
// and decode() is code × scale + offset group by group, bit-exact as before: scale and offset
// are exact products (fp16 × a ≤ 8-bit integer) and so is code × scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "ops/ggml_type.h"
#include "ops/simd.h"

namespace mkv::decoders {

// Throws MkvError naming a type without a decoder (defined in quant.cpp, outside the kernel
// variants, so that none of them instantiates the error formatting code).
[[noreturn]] void throw_unsupported_type(GgmlType type);

}  // namespace mkv::decoders

namespace mkv::decoders::inline MKV_SIMD_NS {

using simd::F8;
using simd::I8;

template <typename D>
concept SubBlockScaled = requires { D::kSubBlock; };

// decode() of a SubBlockScaled decoder: code × scale + offset, group by group.
template <typename D, typename Sink>
void decode_scaled(const uint8_t* block, Sink& sink) {
  constexpr int kSubs = D::kBlockSize / D::kSubBlock;
  float scale[kSubs], offset[kSubs];
  D::sub_scales(block, scale, offset);
  D::decode_codes(block, [&](int g, F8 codes) {
    const int sub = g * 8 / D::kSubBlock;
    if constexpr (D::kHasOffset)
      sink(g, codes * simd::f8_set1(scale[sub]) + simd::f8_set1(offset[sub]));
    else
      sink(g, codes * simd::f8_set1(scale[sub]));
  });
}

struct F32 {
  static constexpr int kBlockSize = 8;
  static constexpr std::size_t kBlockBytes = 32;
  template <typename Sink>
  static void decode(const uint8_t* block, Sink&& sink) {
    sink(0, simd::f8_load(reinterpret_cast<const float*>(block)));
  }
};

struct F16 {
  static constexpr int kBlockSize = 8;
  static constexpr std::size_t kBlockBytes = 16;
  template <typename Sink>
  static void decode(const uint8_t* block, Sink&& sink) {
    sink(0, simd::f8_load_fp16(block));
  }
};

struct BF16 {
  static constexpr int kBlockSize = 8;
  static constexpr std::size_t kBlockBytes = 16;
  template <typename Sink>
  static void decode(const uint8_t* block, Sink&& sink) {
    sink(0, simd::f8_load_bf16(block));
  }
};

// decode() of the SubBlockScaled decoders (Derived::decode_codes and sub_scales).
template <typename Derived>
struct ScaledDecode {
  template <typename Sink>
  static void decode(const uint8_t* block, Sink&& sink) {
    decode_scaled<Derived>(block, sink);
  }
};

// The 32-value legacy formats: one sub-block, fp16 scale d at byte 0 and, with an offset, fp16 m
// at byte 2 (value = code * d + m).
template <typename Derived, std::size_t kBytes, bool kOffset>
struct LegacyBlock : ScaledDecode<Derived> {
  static constexpr int kBlockSize = 32;
  static constexpr std::size_t kBlockBytes = kBytes;
  static constexpr int kSubBlock = 32;
  static constexpr bool kHasOffset = kOffset;
  static void sub_scales(const uint8_t* block, float* scale, float* offset) {
    scale[0] = fp16_to_f32_inline(load_u16(block));
    offset[0] = kOffset ? fp16_to_f32_inline(load_u16(block + 2)) : 0.0f;
  }
};

// Q8_0: { fp16 d; int8 q[32] }, value = q * d.
struct Q8_0 : LegacyBlock<Q8_0, 34, false> {
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
    for (int g = 0; g < 4; ++g) sink(g, simd::to_float(simd::i8_load_s8(block + 2 + 8 * g)));
  }
};

// The 4-bit codes of a 32-value legacy block: byte j of qs holds value j (low nibble) and
// value j + 16 (high nibble). Returns the codes of values 8g .. 8g+7.
inline I8 legacy_nibbles(const uint8_t* qs, int g) {
  const I8 bytes = simd::i8_load_u8(qs + 8 * (g & 1));
  return g < 2 ? (bytes & 0xf) : (bytes >> 4);
}

// Fifth bit of the 5-bit legacy codes: bit i of the little-endian uint32 qh belongs to value i.
inline I8 legacy_high_bits(uint32_t qh, int g) {
  const I8 shifts = simd::i8_lane_index() + simd::i8_set1(8 * g);
  return ((simd::i8_set1(static_cast<int32_t>(qh)) >> shifts) & 1) << 4;
}

// Q4_0: { fp16 d; u8 qs[16] }, value = (code - 8) * d.
struct Q4_0 : LegacyBlock<Q4_0, 18, false> {
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
    for (int g = 0; g < 4; ++g) sink(g, simd::to_float(legacy_nibbles(block + 2, g) - 8));
  }
};

// Q4_1: { fp16 d, m; u8 qs[16] }, value = code * d + m.
struct Q4_1 : LegacyBlock<Q4_1, 20, true> {
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
    for (int g = 0; g < 4; ++g) sink(g, simd::to_float(legacy_nibbles(block + 4, g)));
  }
};

// Q5_0: { fp16 d; u8 qh[4]; u8 qs[16] }, value = (code5 - 16) * d.
struct Q5_0 : LegacyBlock<Q5_0, 22, false> {
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
    const uint32_t qh = load_u32(block + 2);
    for (int g = 0; g < 4; ++g) sink(g, simd::to_float((legacy_nibbles(block + 6, g) | legacy_high_bits(qh, g)) - 16));
  }
};

// Q5_1: { fp16 d, m; u8 qh[4]; u8 qs[16] }, value = code5 * d + m.
struct Q5_1 : LegacyBlock<Q5_1, 24, true> {
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
    const uint32_t qh = load_u32(block + 4);
    for (int g = 0; g < 4; ++g) sink(g, simd::to_float(legacy_nibbles(block + 8, g) | legacy_high_bits(qh, g)));
  }
};

// The 6-bit scales and mins of the 8 sub-blocks of a Q4_K/Q5_K block, packed in 12 bytes s:
// j < 4: scale = s[j] & 63, min = s[j+4] & 63;
// j >= 4: scale = (s[j+4] & 15) | (s[j-4] >> 6) << 4, min = (s[j+4] >> 4) | (s[j] >> 6) << 4;
// unpacked four at a time.
struct KScalesMins {
  uint8_t scale[8];
  uint8_t min[8];
};
inline KScalesMins k_scales_mins(const uint8_t* s) {
  uint32_t u[4];
  std::memcpy(u, s, 12);
  constexpr uint32_t k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x03030303;
  u[3] = ((u[2] >> 4) & k4) | (((u[1] >> 6) & k2) << 4);  // mins 4-7
  const uint32_t mins_low = u[1] & k6;                      // mins 0-3
  u[1] = (u[2] & k4) | (((u[0] >> 6) & k2) << 4);          // scales 4-7
  u[2] = mins_low;
  u[0] &= k6;                                               // scales 0-3
  KScalesMins out;
  std::memcpy(&out, u, sizeof(out));
  return out;
}

// Q4_K and Q5_K: { fp16 d, dmin; u8 scales[12]; [Q5_K: u8 qh[32]]; u8 qs[128] }, 8 sub-blocks
// of 32 values. Sub-block j uses nibble (j & 1) of bytes qs[32*(j/2) .. +32); in Q5_K bit j of
// qh[l] is the fifth bit of value l of sub-block j. value = (d*scale_j) * code - dmin*min_j.
template <bool kHighBits>
struct KQuant4or5 : ScaledDecode<KQuant4or5<kHighBits>> {
  static constexpr int kBlockSize = 256;
  static constexpr std::size_t kBlockBytes = kHighBits ? 176 : 144;
  static constexpr int kSubBlock = 32;
  static constexpr bool kHasOffset = true;
  static void sub_scales(const uint8_t* block, float* scale, float* offset) {
    const KScalesMins sm = k_scales_mins(block + 4);
    const F8 d = simd::f8_set1(fp16_to_f32_inline(load_u16(block)));
    const F8 minus_dmin = simd::f8_set1(-fp16_to_f32_inline(load_u16(block + 2)));
    simd::f8_store(scale, simd::to_float(simd::i8_load_u8(sm.scale)) * d);
    simd::f8_store(offset, simd::to_float(simd::i8_load_u8(sm.min)) * minus_dmin);
  }
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
    const uint8_t* qh = block + 16;
    const uint8_t* qs = block + (kHighBits ? 48 : 16);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 4; ++k) {
        const I8 bytes = simd::i8_load_u8(qs + 32 * (j / 2) + 8 * k);
        I8 code = (j & 1) ? (bytes >> 4) : (bytes & 0xf);
        if constexpr (kHighBits) code = code | (((simd::i8_load_u8(qh + 8 * k) >> j) & 1) << 4);
        sink(4 * j + k, simd::to_float(code));
      }
  }
};
using Q4_K = KQuant4or5<false>;
using Q5_K = KQuant4or5<true>;

#if MKV_SIMD >= 2
// code6 (0 .. 63) of the 32 values 128h + 32q .. +31 of a Q6_K block (layout below), as bytes.
inline __m256i q6k_codes(const uint8_t* block, int h, int q) {
  const __m256i low_bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * h + 32 * (q & 1)));
  const __m256i high_bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * h));
  const __m256i low = _mm256_and_si256(q >= 2 ? _mm256_srli_epi16(low_bytes, 4) : low_bytes, _mm256_set1_epi8(0x0f));
  const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high_bytes, 2 * q), _mm256_set1_epi8(3)), 4);
  return _mm256_or_si256(low, high);
}
// code6 − 32 of the same values, as signed bytes.
inline __m256i q6k_signed_codes(const uint8_t* block, int h, int q) {
  return _mm256_sub_epi8(q6k_codes(block, h, q), _mm256_set1_epi8(32));
}
#endif

// Q6_K: { u8 ql[128]; u8 qh[64]; int8 scales[16]; fp16 d }, two halves of 128 values. In half h,
// value 32*q + l (quarter q, l < 32) has low bits = nibble (q >= 2) of ql[64h + 32*(q & 1) + l],
// high bits = (qh[32h + l] >> 2q) & 3, scale = scales[8h + l/16 + 2q];
// value = (d * scale) * (code6 - 32).
struct Q6_K : ScaledDecode<Q6_K> {
  static constexpr int kBlockSize = 256;
  static constexpr std::size_t kBlockBytes = 210;
  static constexpr int kSubBlock = 16;
  static constexpr bool kHasOffset = false;
  static void sub_scales(const uint8_t* block, float* scale, float* offset) {
    // Sub-block i (16 values) covers values 16i .. 16i + 15 and has scale d · scales[i].
    const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
    const F8 d = simd::f8_set1(fp16_to_f32_inline(load_u16(block + 208)));
    for (int i = 0; i < 16; i += 8) {
      simd::f8_store(scale + i, simd::to_float(simd::i8_load_s8(reinterpret_cast<const uint8_t*>(scales + i))) * d);
      simd::f8_store(offset + i, simd::f8_zero());
    }
  }
  template <typename Sink>
  static void decode_codes(const uint8_t* block, Sink&& sink) {
#if MKV_SIMD >= 2
    // 32 codes at a time with byte operations, then widened 8 at a time (the portable form below
    // spends ~10 operations per 8 values, which makes exact Q6_K decode compute-bound).
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 4; ++q) {
        const __m256i code = q6k_signed_codes(block, h, q);
        const __m128i first = _mm256_castsi256_si128(code), second = _mm256_extracti128_si256(code, 1);
        const int g = 16 * h + 4 * q;
        sink(g, F8{_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(first))});
        sink(g + 1, F8{_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(first, 8)))});
        sink(g + 2, F8{_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(second))});
        sink(g + 3, F8{_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(second, 8)))});
      }
#else
    const uint8_t* ql = block;
    const uint8_t* qh = block + 128;
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        for (int k = 0; k < 4; ++k) {  // values 32q + 8k .. +8 of this half
          const I8 low_bytes = simd::i8_load_u8(ql + 64 * h + 32 * (q & 1) + 8 * k);
          const I8 low = q >= 2 ? (low_bytes >> 4) : (low_bytes & 0xf);
          const I8 high = ((simd::i8_load_u8(qh + 32 * h + 8 * k) >> (2 * q)) & 3) << 4;
          sink(16 * h + 4 * q + k, simd::to_float((low | high) - 32));
        }
      }
    }
#endif
  }
};

// Value i of a row stored in a float type (F32, F16, BF16): for row tails shorter than 8 values.
inline float float_type_value(GgmlType type, const uint8_t* row, int64_t i) {
  switch (type) {
    case GgmlType::F32: return reinterpret_cast<const float*>(row)[i];
    case GgmlType::F16: return fp16_to_f32_inline(load_u16(row + 2 * i));
    case GgmlType::BF16: return bf16_to_f32_inline(load_u16(row + 2 * i));
    default: throw_unsupported_type(type);  // not a float type: a caller's bug
  }
}

// Calls f.template operator()<Decoder>() for the decoder of `type`; throws for types without one.
template <typename F>
decltype(auto) visit_decoder(GgmlType type, F&& f) {
  switch (type) {
    case GgmlType::F32: return f.template operator()<F32>();
    case GgmlType::F16: return f.template operator()<F16>();
    case GgmlType::BF16: return f.template operator()<BF16>();
    case GgmlType::Q8_0: return f.template operator()<Q8_0>();
    case GgmlType::Q4_0: return f.template operator()<Q4_0>();
    case GgmlType::Q4_1: return f.template operator()<Q4_1>();
    case GgmlType::Q5_0: return f.template operator()<Q5_0>();
    case GgmlType::Q5_1: return f.template operator()<Q5_1>();
    case GgmlType::Q4_K: return f.template operator()<Q4_K>();
    case GgmlType::Q5_K: return f.template operator()<Q5_K>();
    case GgmlType::Q6_K: return f.template operator()<Q6_K>();
    default: throw_unsupported_type(type);
  }
}

}  // namespace mkv::decoders::inline MKV_SIMD_NS
