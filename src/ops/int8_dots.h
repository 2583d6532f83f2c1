// Helpers shared by the integer decode kernels (matmul_int8_kernels.h,
// matmul_int8_kquant_kernels.h); private to src/ops.
#pragma once

#include <cstdint>

#include "ops/half.h"
#include "ops/simd.h"

namespace mkv::int8_dots::inline MKV_SIMD_NS {

inline float fp16_at(const uint8_t* p) { return fp16_to_f32_inline(load_u16(p)); }

#if MKV_SIMD >= 2

// Unsigned weight codes (at most 128) times signed activation codes: int32 lane i = the sum of
// the products of bytes 4i .. 4i+3 (lanes 0-3 the first 16 bytes, 4-7 the last 16), exact.
// AVX-512: one VNNI vpdpbusd; AVX2: vpmaddubsw (pairs to int16: |sum| <= 2·128·127 < 2^15, no
// saturation) then vpmaddwd with ones. Both give the same integers.
inline __m256i dot_u8_i32(__m256i w, __m256i x) {
#if MKV_SIMD >= 3
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
#endif
}
// start + dot_u8_i32(w, x), lane by lane (AVX-512: start is vpdpbusd's accumulator). AVX2 pairs
// the products in int16 first, so there w must stay below 128 (as for dot_u8_i32).
inline __m256i dot_u8_i32_from(__m256i start, __m256i w, __m256i x) {
#if MKV_SIMD >= 3
  return _mm256_dpbusd_epi32(start, w, x);
#else
  return _mm256_add_epi32(start, dot_u8_i32(w, x));
#endif
}
// sum plus, per int32 lane i, a[2i]·b[2i] + a[2i+1]·b[2i+1] of the int16 lanes (exact while the
// sums fit in 32 bits). AVX-512: one VNNI vpdpwssd; AVX2: vpmaddwd then vpaddd. Same integers.
inline __m256i add_pair_products(__m256i sum, __m256i a, __m256i b) {
#if MKV_SIMD >= 3
  return _mm256_dpwssd_epi32(sum, a, b);
#else
  return _mm256_add_epi32(sum, _mm256_madd_epi16(a, b));
#endif
}
// dot_u8_i32 as 8 floats (exact: the sums stay below 2^24).
inline __m256 dot_u8(__m256i w, __m256i x) { return _mm256_cvtepi32_ps(dot_u8_i32(w, x)); }
// Signed weight codes w times signed activation codes, lanes as dot_u8, given magnitude = |w|
// (_mm256_sign_epi8(w, w)): |w| and x with w's sign (the sign trick: the unsigned operand must be
// the weight's magnitude). Kernels that dot one block with several tokens compute |w| once.
inline __m256 dot_s8_magnitude(__m256i magnitude, __m256i w, __m256i x) {
  return dot_u8(magnitude, _mm256_sign_epi8(x, w));
}
inline __m256 dot_s8(__m256i w, __m256i x) { return dot_s8_magnitude(_mm256_sign_epi8(w, w), w, x); }
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline float hsum(__m256 a) { return simd::hsum(simd::F8{a}); }

#endif

}  // namespace mkv::int8_dots::inline MKV_SIMD_NS
