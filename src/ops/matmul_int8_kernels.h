// The integer decode kernels, compiled once per kernel variant (private to src/ops; included by
// the kernels_*.cpp files, see matmul_float_kernels.h): each weight block meets the quantised
// activations (matmul_int8.h) in an integer dot product. Weight layouts follow ggml
// (block_decoders.h). MKV_SIMD >= 2 sums each block's integer products exactly (int8_dots.h:
// vpmaddubsw/vpmaddwd, or one VNNI vpdpbusd) and accumulates scale x sum in float with FMAs; the
// portable code does the same in plain C++, so the variants differ only in float accumulation order
// (AVX2 and AVX-512 not at all: same integers, same float steps).
// Entry point: matmul_int8() (the KernelTable signature).
#pragma once

#include <algorithm>

#include "ops/int8_dots.h"
#include "ops/kernel_table.h"
#include "ops/matmul_int8_kquant_kernels.h"
#include "ops/row_items.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

constexpr int kInt8TileTokens = 4;  // tokens that share one decoding of each weight block
constexpr int64_t kInt8MinParallelMacs = 1 << 18;  // multiply-adds below which one thread is faster

using int8_dots::fp16_at;

// Per weight type: block size in bytes, and the dot product of one row with quantised activations.
enum class Kind { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };

#if MKV_SIMD >= 2

using int8_dots::dot_s8_magnitude;
using int8_dots::dot_u8;
using int8_dots::hsum;

// 32 nibble codes of a legacy block: low nibbles (values 0..15), then high nibbles (16..31).
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_insertf128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}
// 0x10 in byte i where bit i of qh is set (the fifth bit of the 5-bit codes).
inline __m256i high_bits(uint32_t qh) {
  const __m256i shuffle = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202,
                                             0x0303030303030303);
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(qh)), shuffle);
  v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  v = _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// Whether a type's codes are signed, and whether its blocks carry an offset m (fp16 at byte 2),
// which adds m * s of each activation block.
template <Kind K>
constexpr bool kSignedCodes = K == Kind::Q8_0 || K == Kind::Q4_0 || K == Kind::Q5_0;
template <Kind K>
constexpr bool kHasOffset = K == Kind::Q4_1 || K == Kind::Q5_1;
// Whether the signed codes c are dotted as the unsigned codes c + z that the blocks store (z =
// code_zero_point) from the activations' lane biases, -z · Σ x per lane (Int8Activations): the same
// integers in every lane as the sign trick (|c| against x with c's sign), which the other signed
// type, Q8_0, keeps: its c + 128 would saturate AVX2's vpmaddubsw pairs, and under VNNI the bias
// load cost more than the two sign operations it saves.
template <Kind K>
constexpr bool kBiasedCodes = K == Kind::Q4_0 || K == Kind::Q5_0;
template <Kind K>
constexpr int kZeroPoint = code_zero_point(K == Kind::Q4_0 ? GgmlType::Q4_0 : K == Kind::Q5_0 ? GgmlType::Q5_0 : GgmlType::F32);

// The 32 integer codes of one weight block: unsigned c + z for kBiasedCodes, else signed bytes for
// kSignedCodes, else unsigned.
template <Kind K>
inline __m256i block_codes(const uint8_t* w) {
  if constexpr (K == Kind::Q8_0) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2));
  else if constexpr (K == Kind::Q4_0) return nibbles(w + 2);
  else if constexpr (K == Kind::Q4_1) return nibbles(w + 4);
  else if constexpr (K == Kind::Q5_0) return _mm256_or_si256(nibbles(w + 6), high_bits(load_u32(w + 2)));
  else return _mm256_or_si256(nibbles(w + 8), high_bits(load_u32(w + 4)));
}

// The 8 int32 lanes of one weight block's dot with activation block i, as floats: codes from
// block_codes, magnitude = |codes| for the sign trick (kSignedCodes but not kBiasedCodes).
template <Kind K>
inline __m256 block_dot(__m256i codes, [[maybe_unused]] __m256i magnitude, const Int8Activations& x, int64_t i) {
  const __m256i xq = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.codes + 32 * i));
  if constexpr (kBiasedCodes<K>)
    return _mm256_cvtepi32_ps(int8_dots::dot_u8_i32_from(int8_dots::load32(x.lane_bias + 8 * i), codes, xq));
  else if constexpr (kSignedCodes<K>)
    return dot_s8_magnitude(magnitude, codes, xq);
  else
    return dot_u8(codes, xq);
}

// One weight row against T tokens' activations from block `first` on (token t's blocks at first +
// t * x_stride); y[t * y_stride] = the row's dot with token t. The block's codes, |codes| and scale
// are decoded once for the T tokens; each token's sums run in the same order for every T (bitwise
// the same result). The activation codes are read from x.codes (aligned: no load splits a cache
// line), the scales from x.d.
// One row at a time: streaming 2 or 4 rows together (sharing the activation loads) was slower.
// Two blocks per step, each into its own accumulator, and one prefetch per step (about one per
// cache line: a Q8_0 block is 34 bytes) rather than one per block, which issues half the
// prefetches for the same lines.
template <Kind K, int T>
void row_dots(const uint8_t* w, std::size_t block_bytes, const Int8Activations& x, int64_t first, int64_t x_stride,
              int64_t nb, float* y, int64_t y_stride) {
  __m256 acc[T][2];
  for (auto& a : acc) a[0] = a[1] = _mm256_setzero_ps();
  float offset[T] = {};  // Σ m * s over the blocks (Q4_1, Q5_1), per token
  auto add_block = [&](const uint8_t* block, int64_t b, int k) {
    const __m256i codes = block_codes<K>(block);
    [[maybe_unused]] const __m256i magnitude =
        kSignedCodes<K> && !kBiasedCodes<K> ? _mm256_sign_epi8(codes, codes) : codes;
    const float dw = fp16_at(block);
    [[maybe_unused]] const float m = kHasOffset<K> ? fp16_at(block + 2) : 0.0f;
    for (int t = 0; t < T; ++t) {
      const int64_t i = first + t * x_stride + b;  // the activation block
      if constexpr (kHasOffset<K>) offset[t] += m * x.s[i];
      acc[t][k] = _mm256_fmadd_ps(_mm256_set1_ps(dw * x.d[i]), block_dot<K>(codes, magnitude, x, i), acc[t][k]);
    }
  };
  int64_t b = 0;
  for (; b + 1 < nb; b += 2, w += 2 * block_bytes) {
    simd::prefetch_stream_ahead(w);
    add_block(w, b, 0);
    add_block(w + block_bytes, b + 1, 1);
  }
  if (b < nb) add_block(w, b, 0);
  for (int t = 0; t < T; ++t) y[t * y_stride] = hsum(_mm256_add_ps(acc[t][0], acc[t][1])) + offset[t];
}

#if MKV_SIMD >= 3
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593: see f16x16_load

// The kinds whose AVX-512 row dots take two blocks per 512-bit vector (row_dots_x16).
template <Kind K>
constexpr bool kPairedRowDots = K == Kind::Q8_0 || K == Kind::Q4_0 || K == Kind::Q5_0;

// The 128-bit quarters [a, b, c, d] of v as [a, c, b, d].
inline __m512i interleave_quarters(__m512i v) {
  return _mm512_permutexvar_epi64(_mm512_set_epi64(7, 6, 3, 2, 5, 4, 1, 0), v);
}

// row_dots<K, T> in 512-bit registers, two blocks b and b + 1 per vector, each lane summing the
// same 4 products as a lane of the 256-bit code and taking the same FMAs with the same scale, so
// that the lanes of one 512-bit accumulator are row_dots' even-block and odd-block accumulators:
// bitwise the same result with about half the instructions per block.
// Q8_0: b in lanes 0-7, b + 1 in lanes 8-15 (a block's 32 codes are 256 consecutive bits). AVX-512
// has no vpsignb: |w| is vpabsb, and x takes w's sign through a mask of w's sign bits (x stays where
// w is 0, which |w| = 0 cancels).
// Q4_0, Q5_0 (kBiasedCodes): a block's 16 code bytes hold its values 0-15 in the low nibbles and
// 16-31 in the high ones, so the quarters are b's values 0-15, b + 1's 0-15, b's 16-31 and b + 1's
// 16-31: lanes 0-3 and 8-11 are b's 256-bit lanes 0-3 and 4-7, lanes 4-7 and 12-15 b + 1's. The
// activation codes and lane biases are put in that order with one permutation each; Q5_0's fifth
// bits are a byte mask in the same order.
template <Kind K, int T>
void row_dots_x16(const uint8_t* w, std::size_t block_bytes, const Int8Activations& x, int64_t first,
                  int64_t x_stride, int64_t nb, float* y, int64_t y_stride) {
  static_assert(kPairedRowDots<K>);
  constexpr bool kNibbles = K != Kind::Q8_0;
  // Lane l takes element 0 (block b's scale) or 1 (block b + 1's) of the pair's scales.
  const __m512i pair_lanes = kNibbles ? _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0)
                                      : _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 acc[T];
  for (auto& a : acc) a = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 1 < nb; b += 2, w += 2 * block_bytes) {
    simd::prefetch_stream_ahead(w);
    const uint8_t* next = w + block_bytes;
    __m512i codes, magnitude = _mm512_setzero_si512();
    __mmask64 negative = 0;
    if constexpr (K == Kind::Q8_0) {
      codes = _mm512_inserti64x4(_mm512_castsi256_si512(int8_dots::load32(w + 2)), int8_dots::load32(next + 2), 1);
      magnitude = _mm512_abs_epi8(codes);
      negative = _mm512_movepi8_mask(codes);
    } else {
      constexpr int kCodes = K == Kind::Q4_0 ? 2 : 6;  // offset of the 16 code bytes
      const __m256i bytes = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + kCodes))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(next + kCodes)), 1);
      codes = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(bytes), _mm256_srli_epi16(bytes, 4), 1),
                               _mm512_set1_epi8(0x0f));
      if constexpr (K == Kind::Q5_0) {
        const uint64_t high0 = load_u32(w + 2), high1 = load_u32(next + 2);
        const __mmask64 fifth = (high0 & 0xffff) | (high1 & 0xffff) << 16 | (high0 >> 16) << 32 | (high1 >> 16) << 48;
        codes = _mm512_mask_add_epi8(codes, fifth, codes, _mm512_set1_epi8(0x10));
      }
    }
    const __m128 dw = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(load_u16(w)), load_u16(next), 1));
    for (int t = 0; t < T; ++t) {
      const int64_t i = first + t * x_stride + b;  // the pair's first activation block
      const __m512i xq = _mm512_loadu_si512(x.codes + 32 * i);
      __m512i sums;
      if constexpr (kNibbles)
        sums = _mm512_dpbusd_epi32(interleave_quarters(_mm512_loadu_si512(x.lane_bias + 8 * i)), codes,
                                   interleave_quarters(xq));
      else
        sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), magnitude,
                                   _mm512_mask_sub_epi8(xq, negative, _mm512_setzero_si512(), xq));
      const __m128 scales = _mm_mul_ps(dw, _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(x.d + i))));
      acc[t] = _mm512_fmadd_ps(_mm512_permutexvar_ps(pair_lanes, _mm512_castps128_ps512(scales)),
                               _mm512_cvtepi32_ps(sums), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    const __m256 low = _mm512_castps512_ps256(acc[t]), high = _mm512_extractf32x8_ps(acc[t], 1);
    __m256 even = kNibbles ? _mm256_permute2f128_ps(low, high, 0x20) : low;
    const __m256 odd = kNibbles ? _mm256_permute2f128_ps(low, high, 0x31) : high;
    if (b < nb) {  // a last, even block, as row_dots takes it
      const int64_t i = first + t * x_stride + b;
      const __m256i codes = block_codes<K>(w);
      even = _mm256_fmadd_ps(_mm256_set1_ps(fp16_at(w) * x.d[i]),
                             block_dot<K>(codes, _mm256_sign_epi8(codes, codes), x, i), even);
    }
    y[t * y_stride] = hsum(_mm256_add_ps(even, odd));
  }
}

#pragma GCC diagnostic pop
#endif

#else  // portable

// Code of value i (0..31) of a legacy block, before subtracting the type's zero point.
inline int nibble_code(const uint8_t* qs, int i) { return i < 16 ? (qs[i] & 0xf) : (qs[i - 16] >> 4); }

template <Kind K>
float row_dot(const uint8_t* w, std::size_t block_bytes, const ActBlockQ8* x, int64_t nb) {
  float sum = 0.0f, offset = 0.0f;
  for (int64_t b = 0; b < nb; ++b, w += block_bytes) {
    simd::prefetch_stream_ahead(w);
    int32_t dot = 0;
    for (int i = 0; i < 32; ++i) {
      int code;
      if constexpr (K == Kind::Q8_0) {
        code = static_cast<int8_t>(w[2 + i]);
      } else if constexpr (K == Kind::Q4_0) {
        code = nibble_code(w + 2, i) - 8;
      } else if constexpr (K == Kind::Q4_1) {
        code = nibble_code(w + 4, i);
      } else if constexpr (K == Kind::Q5_0) {
        code = (nibble_code(w + 6, i) | (((load_u32(w + 2) >> i) & 1) << 4)) - 16;
      } else {
        code = nibble_code(w + 8, i) | (((load_u32(w + 4) >> i) & 1) << 4);
      }
      dot += code * x[b].q[i];
    }
    sum += fp16_at(w) * x[b].d * static_cast<float>(dot);
    if constexpr (K == Kind::Q4_1 || K == Kind::Q5_1) offset += fp16_at(w + 2) * x[b].s;
  }
  return sum + offset;
}

template <Kind K, int T>
void row_dots(const uint8_t* w, std::size_t block_bytes, const Int8Activations& x, int64_t first, int64_t x_stride,
              int64_t nb, float* y, int64_t y_stride) {
  for (int t = 0; t < T; ++t) y[t * y_stride] = row_dot<K>(w, block_bytes, x.blocks + first + t * x_stride, nb);
}

#endif

template <Kind K>
constexpr bool kSuperBlocks = K == Kind::Q4_K || K == Kind::Q5_K || K == Kind::Q6_K;

// One row against T tokens of x (nb blocks per token) from block `first` on (token t's blocks at
// first + t * nb); y[t * y_stride].
template <Kind K, int T>
void any_row_dots(const uint8_t* w, std::size_t block_bytes, const Int8Activations& x, int64_t first, int64_t nb,
                  float* y, int64_t y_stride) {
  if constexpr (kSuperBlocks<K>) {
    for (int t = 0; t < T; ++t) {
      const int64_t i = first + t * nb;
      const ActBlockQ8* xt = x.blocks + i;
      const KActivations act{x.codes + 32 * i, x.d + i, x.s + i,
                             x.half_sums ? x.half_sums + 2 * i : nullptr};
      float& out = y[t * y_stride];
      if constexpr (K == Kind::Q4_K) out = q4_k_row_dot(w, act, xt, nb / 8);
      else if constexpr (K == Kind::Q5_K) out = q5_k_row_dot(w, act, xt, nb / 8);
      else out = q6_k_row_dot(w, act, xt, nb / 8);
    }
  } else {
#if MKV_SIMD >= 3
    if constexpr (kPairedRowDots<K>) return row_dots_x16<K, T>(w, block_bytes, x, first, nb, nb, y, y_stride);
#endif
    row_dots<K, T>(w, block_bytes, x, first, nb, nb, y, y_stride);
  }
}

// Rows [row_begin, row_end) of y = W x, each row and token on its own.
template <Kind K>
void run_rows(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, int64_t row_begin, int64_t row_end,
              float* y) {
  const int64_t nb = w.cols / 32;
  const std::size_t row_bytes = ggml_row_bytes(w.type, w.cols);
  const std::size_t block_bytes = ggml_type_info(w.type).block_bytes;
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t t = 0; t < n_tokens;) {
      const uint8_t* row = base + r * row_bytes;
      if (n_tokens - t >= kInt8TileTokens) {
        any_row_dots<K, kInt8TileTokens>(row, block_bytes, x, t * nb, nb, y + t * w.rows + r, w.rows);
        t += kInt8TileTokens;
      } else {
        any_row_dots<K, 1>(row, block_bytes, x, t * nb, nb, y + t * w.rows + r, w.rows);
        t += 1;
      }
    }
}

template <Kind K>
void run(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, float* y) {
  const bool parallel = w.rows * w.cols * n_tokens >= kInt8MinParallelMacs;
  row_items::for_each_row_run(w.rows, ggml_row_bytes(w.type, w.cols), parallel,
                              [&](int64_t begin, int64_t end) { run_rows<K>(w, x, n_tokens, begin, end, y); });
}

// Calls f.template operator()<K>() with the Kind of w.type (a type matmul_int8_supported accepts).
template <typename F>
void visit_kind(GgmlType type, F&& f) {
  switch (type) {
    case GgmlType::Q8_0: return f.template operator()<Kind::Q8_0>();
    case GgmlType::Q4_0: return f.template operator()<Kind::Q4_0>();
    case GgmlType::Q4_1: return f.template operator()<Kind::Q4_1>();
    case GgmlType::Q5_0: return f.template operator()<Kind::Q5_0>();
    case GgmlType::Q5_1: return f.template operator()<Kind::Q5_1>();
    case GgmlType::Q4_K: return f.template operator()<Kind::Q4_K>();
    case GgmlType::Q5_K: return f.template operator()<Kind::Q5_K>();
    case GgmlType::Q6_K: return f.template operator()<Kind::Q6_K>();
    default: decoders::throw_unsupported_type(type);  // the caller checks the type
  }
}

void matmul_int8(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, float* y) {
  visit_kind(w.type, [&]<Kind K>() { run<K>(w, x, n_tokens, y); });
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
