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

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

constexpr int64_t kInt8ItemRows = 64;
constexpr int64_t kInt8MinParallelMacs = 1 << 18;  // multiply-adds below which one thread is faster

using int8_dots::fp16_at;

// Per weight type: block size in bytes, and the dot product of one row with quantised activations.
enum class Kind { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };

#if MKV_SIMD >= 2

using int8_dots::dot_s8;
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

// One weight block against the activation codes xq: 8 partial integer sums as floats, to be
// scaled by the block's d; adds m * s to `offset` for the types with an offset.
template <Kind K>
inline __m256 block_dot(const uint8_t* w, __m256i xq, const ActBlockQ8& x, float& offset) {
  if constexpr (K == Kind::Q8_0) {
    return dot_s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2)), xq);
  } else if constexpr (K == Kind::Q4_0) {
    return dot_s8(_mm256_sub_epi8(nibbles(w + 2), _mm256_set1_epi8(8)), xq);
  } else if constexpr (K == Kind::Q4_1) {
    offset += fp16_at(w + 2) * x.s;
    return dot_u8(nibbles(w + 4), xq);
  } else if constexpr (K == Kind::Q5_0) {
    const __m256i code = _mm256_or_si256(nibbles(w + 6), high_bits(load_u32(w + 2)));
    return dot_s8(_mm256_sub_epi8(code, _mm256_set1_epi8(16)), xq);
  } else {
    offset += fp16_at(w + 2) * x.s;
    return dot_u8(_mm256_or_si256(nibbles(w + 8), high_bits(load_u32(w + 4))), xq);
  }
}

// One row at a time: streaming 2 or 4 rows together (sharing the activation loads) was slower.
// Two blocks per step, each into its own accumulator, and one prefetch per step (about one per
// cache line: a Q8_0 block is 34 bytes) rather than one per block, which issues half the
// prefetches for the same lines.
template <Kind K>
float row_dot(const uint8_t* w, std::size_t block_bytes, const ActBlockQ8* x, int64_t nb) {
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  float offset = 0.0f;  // Σ m * s over the blocks (Q4_1, Q5_1)
  auto add_block = [&](const uint8_t* block, const ActBlockQ8& xb, __m256& a) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.q));
    a = _mm256_fmadd_ps(_mm256_set1_ps(fp16_at(block) * xb.d), block_dot<K>(block, xq, xb, offset), a);
  };
  int64_t b = 0;
  for (; b + 1 < nb; b += 2, w += 2 * block_bytes) {
    simd::prefetch_stream_ahead(w);
    add_block(w, x[b], acc[0]);
    add_block(w + block_bytes, x[b + 1], acc[1]);
  }
  if (b < nb) add_block(w, x[b], acc[0]);
  return hsum(_mm256_add_ps(acc[0], acc[1])) + offset;
}

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

#endif

// One row against one token's activation blocks (nb of them).
template <Kind K>
float any_row_dot(const uint8_t* w, std::size_t block_bytes, const ActBlockQ8* x, int64_t nb) {
  if constexpr (K == Kind::Q4_K) return q4_k_row_dot(w, x, nb / 8);
  else if constexpr (K == Kind::Q5_K) return q5_k_row_dot(w, x, nb / 8);
  else if constexpr (K == Kind::Q6_K) return q6_k_row_dot(w, x, nb / 8);
  else return row_dot<K>(w, block_bytes, x, nb);
}

template <Kind K>
void run(const WeightMatrix& w, const ActBlockQ8* xq, int64_t n_tokens, float* y) {
  const int64_t nb = w.cols / 32;
  const std::size_t row_bytes = ggml_row_bytes(w.type, w.cols);
  const std::size_t block_bytes = ggml_type_info(w.type).block_bytes;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t n_items = (w.rows + kInt8ItemRows - 1) / kInt8ItemRows;
  const bool parallel = n_items > 1 && w.rows * w.cols * n_tokens >= kInt8MinParallelMacs;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t i = 0; i < n_items; ++i) {
    const int64_t r1 = std::min(w.rows, (i + 1) * kInt8ItemRows);
    for (int64_t r = i * kInt8ItemRows; r < r1; ++r)
      for (int64_t t = 0; t < n_tokens; ++t)
        y[t * w.rows + r] = any_row_dot<K>(base + r * row_bytes, block_bytes, xq + t * nb, nb);
  }
}

void matmul_int8(const WeightMatrix& w, const ActBlockQ8* xq, int64_t n_tokens, float* y) {
  switch (w.type) {
    case GgmlType::Q8_0: return run<Kind::Q8_0>(w, xq, n_tokens, y);
    case GgmlType::Q4_0: return run<Kind::Q4_0>(w, xq, n_tokens, y);
    case GgmlType::Q4_1: return run<Kind::Q4_1>(w, xq, n_tokens, y);
    case GgmlType::Q5_0: return run<Kind::Q5_0>(w, xq, n_tokens, y);
    case GgmlType::Q5_1: return run<Kind::Q5_1>(w, xq, n_tokens, y);
    case GgmlType::Q4_K: return run<Kind::Q4_K>(w, xq, n_tokens, y);
    case GgmlType::Q5_K: return run<Kind::Q5_K>(w, xq, n_tokens, y);
    case GgmlType::Q6_K: return run<Kind::Q6_K>(w, xq, n_tokens, y);
    default: decoders::throw_unsupported_type(w.type);  // the caller checks the type
  }
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
