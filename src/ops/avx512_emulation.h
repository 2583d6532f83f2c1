// The AVX-512 intrinsics of the kernel code for the emulated AVX-512 variant (private to src/ops;
// included by simd_level.h after <immintrin.h>, in kernels_avx512_emulated.cpp only). SIMDe
// (libsimde-dev) implements them with AVX2 instructions under their Intel names (its native
// aliases: a macro per intrinsic and a typedef per vector type), so that the avx512 variant's
// source runs unchanged on hosts without AVX-512. Written here instead: the two masked float
// loads and stores, the 16-lane fp16 and int32 conversions and the float32 half extraction that
// SIMDe 0.7.4 lacks; vdpbf16ps, whose SIMDe
// form adds a lane's two products in the other order than the instruction; and the 256-bit
// vpdpbusd, whose SIMDe form (a long shuffle sequence) made the integer products some thirty
// times slower than the avx2 variant's (and the 512-bit one, as two of those), and the 256-bit
// vpdpwssd likewise.
#pragma once

#include <array>
#include <cstring>

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

namespace mkv::avx512_emulation {

// _mm256_dpbusd_epi32: src plus, per 32-bit lane, the four products of a's unsigned bytes and
// b's signed bytes, exact (no saturation; the sum wraps as the instruction's does). Bytes are
// widened to 16 bits, even and odd apart, and vpmaddwd adds each pair of products in 32 bits.
inline __m256i dpbusd_epi32(__m256i src, __m256i a, __m256i b) {
  const __m256i low_bytes = _mm256_set1_epi16(0x00ff);
  const __m256i a_even = _mm256_and_si256(a, low_bytes), a_odd = _mm256_srli_epi16(a, 8);
  const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8), b_odd = _mm256_srai_epi16(b, 8);
  const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd));
  return _mm256_add_epi32(src, sums);
}

// _mm256_dpwssd_epi32: src plus, per 32-bit lane, the two products of a's and b's int16 values
// (no saturation).
inline __m256i dpwssd_epi32(__m256i src, __m256i a, __m256i b) { return _mm256_add_epi32(src, _mm256_madd_epi16(a, b)); }

// _mm512_dpbf16_ps as the instruction computes it: lane j of src plus the product of a's and b's
// odd bf16 values (2j + 1, the high halves of the 32-bit lanes), then plus that of the even ones,
// each sum rounded to float32 (a product of two bf16 values is exact in float32). The instruction
// also flushes denormal inputs and results to zero, which this does not.
inline simde__m512 dpbf16_ps(simde__m512 src, simde__m512bh a, simde__m512bh b) {
  __m256 acc[2];
  __m256i av[2], bv[2];
  static_assert(sizeof acc == sizeof src && sizeof av == sizeof a && sizeof bv == sizeof b);
  std::memcpy(acc, &src, sizeof acc);
  std::memcpy(av, &a, sizeof av);
  std::memcpy(bv, &b, sizeof bv);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int h = 0; h < 2; ++h) {
    const __m256 a_odd = _mm256_castsi256_ps(_mm256_and_si256(av[h], high));
    const __m256 b_odd = _mm256_castsi256_ps(_mm256_and_si256(bv[h], high));
    const __m256 a_even = _mm256_castsi256_ps(_mm256_slli_epi32(av[h], 16));
    const __m256 b_even = _mm256_castsi256_ps(_mm256_slli_epi32(bv[h], 16));
    acc[h] = _mm256_add_ps(acc[h], _mm256_mul_ps(a_odd, b_odd));
    acc[h] = _mm256_add_ps(acc[h], _mm256_mul_ps(a_even, b_even));
  }
  simde__m512 out;
  std::memcpy(&out, acc, sizeof out);
  return out;
}

// _mm512_maskz_loadu_ps: the lanes of k read from p, the others 0 (and not read).
inline simde__m512 maskz_loadu_ps(simde__mmask16 k, const void* p) {
  simde__m512_private lanes;
  for (int i = 0; i < 16; ++i) lanes.f32[i] = (k >> i) & 1 ? static_cast<const float*>(p)[i] : 0.0f;
  return simde__m512_from_private(lanes);
}

// _mm512_mask_storeu_ps: the lanes of k written to p, the others left as they are.
inline void mask_storeu_ps(void* p, simde__mmask16 k, simde__m512 a) {
  const simde__m512_private lanes = simde__m512_to_private(a);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) static_cast<float*>(p)[i] = lanes.f32[i];
}

// The two halves of a vector (low half first), and a vector from its two halves.
template <typename Half, typename Whole>
inline std::array<Half, 2> halves(const Whole& v) {
  static_assert(2 * sizeof(Half) == sizeof(Whole));
  std::array<Half, 2> out;
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}
template <typename Whole, typename Half>
inline Whole joined(Half low, Half high) {
  static_assert(2 * sizeof(Half) == sizeof(Whole));
  const Half both[2] = {low, high};
  Whole out;
  std::memcpy(&out, both, sizeof out);
  return out;
}

// _mm512_cvtph_ps: 16 fp16 values to float32 (exact), as two 8-lane F16C conversions.
inline simde__m512 cvtph_ps(simde__m256i a) {
  const auto h = halves<__m128i>(a);
  return joined<simde__m512>(_mm256_cvtph_ps(h[0]), _mm256_cvtph_ps(h[1]));
}

// _mm512_dpbusd_epi32 as two of the 256-bit dpbusd_epi32 above (SIMDe's is as slow as its 256-bit one).
inline simde__m512i dpbusd512_epi32(simde__m512i src, simde__m512i a, simde__m512i b) {
  const auto s = halves<__m256i>(src), av = halves<__m256i>(a), bv = halves<__m256i>(b);
  return joined<simde__m512i>(dpbusd_epi32(s[0], av[0], bv[0]), dpbusd_epi32(s[1], av[1], bv[1]));
}

// _mm512_cvtepi32_ps (SIMDe 0.7.4 lacks it): two 8-lane conversions.
inline simde__m512 cvtepi32_ps(simde__m512i a) {
  const auto h = halves<__m256i>(a);
  return joined<simde__m512>(_mm256_cvtepi32_ps(h[0]), _mm256_cvtepi32_ps(h[1]));
}

// _mm512_extractf32x8_ps (SIMDe 0.7.4 lacks it): lanes 8i .. 8i + 7.
inline __m256 extractf32x8_ps(simde__m512 a, int i) { return halves<__m256>(a)[i & 1]; }
}  // namespace mkv::avx512_emulation

#undef _mm256_dpbusd_epi32
#define _mm256_dpbusd_epi32 mkv::avx512_emulation::dpbusd_epi32
#undef _mm256_dpwssd_epi32
#define _mm256_dpwssd_epi32 mkv::avx512_emulation::dpwssd_epi32
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps mkv::avx512_emulation::dpbf16_ps
#define _mm512_maskz_loadu_ps mkv::avx512_emulation::maskz_loadu_ps
#define _mm512_mask_storeu_ps mkv::avx512_emulation::mask_storeu_ps
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps mkv::avx512_emulation::cvtph_ps
#undef _mm512_dpbusd_epi32
#define _mm512_dpbusd_epi32 mkv::avx512_emulation::dpbusd512_epi32
#define _mm512_cvtepi32_ps mkv::avx512_emulation::cvtepi32_ps
#define _mm512_extractf32x8_ps mkv::avx512_emulation::extractf32x8_ps
