// Helpers shared by the integer decode kernels (matmul_int8.cpp, matmul_int8_kquants.cpp);
// private to src/ops.
#pragma once

#include <cstdint>

#include "ops/half.h"
#include "ops/simd.h"

namespace mkv::int8_dots {

inline float fp16_at(const uint8_t* p) { return fp16_to_f32_inline(load_u16(p)); }

#if MOMENTKV_NATIVE

// Sum over pairs of products of signed bytes, as 8 floats (exact integers below 2^24): int32
// lane i holds bytes 4i .. 4i+3 (lanes 0-3 the first 16 bytes, 4-7 the last 16).
inline __m256 dot_s8(__m256i w, __m256i x) {
  const __m256i aw = _mm256_sign_epi8(w, w);
  const __m256i sx = _mm256_sign_epi8(x, w);
  const __m256i d16 = _mm256_maddubs_epi16(aw, sx);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(d16, _mm256_set1_epi16(1)));
}
// Unsigned weight codes (at most 63) times signed activation codes, lanes as dot_s8.
inline __m256 dot_u8(__m256i w, __m256i x) {
  const __m256i d16 = _mm256_maddubs_epi16(w, x);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(d16, _mm256_set1_epi16(1)));
}
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline float hsum(__m256 a) { return simd::hsum(simd::F8{a}); }

#endif

}  // namespace mkv::int8_dots
