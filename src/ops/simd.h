// Eight-lane float and int32 vectors for the block decoders and matrix kernels (private to
// src/ops). With MKV_SIMD >= 2 (simd_level.h: AVX2, or AVX-512 kernels, which use these 8-lane
// helpers where they have no 16-lane code of their own) they wrap AVX2 registers; otherwise they
// are plain arrays that the compiler may vectorise. Both give identical results for every
// operation except fmadd, which is fused (one rounding) in native code and a multiply then an add
// in portable code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "ops/half.h"

namespace mkv::simd::inline MKV_SIMD_NS {

// How far ahead of the weight block being read the matrix kernels prefetch. Each weight row is
// streamed from memory once per token, and the hardware prefetcher stops at 4 KiB page
// boundaries, so the kernels prefetch explicitly. A distance of 1.5-3 KiB keeps the next blocks
// arriving in time; 512 B is too late and 4 KiB runs ahead of what the caches keep.
inline constexpr int kPrefetchBytes = 3072;
inline void prefetch_ahead(const void* p) { __builtin_prefetch(static_cast<const char*>(p) + kPrefetchBytes); }
// For weight rows read once per token by the integer decode kernels: a non-temporal hint, so that
// they do not evict the activations and the KV cache from L2/L3, and twice the distance. Those
// kernels stream a row two to three times faster per byte than the float ones, so more lines must
// be on their way to cover the same memory latency (docs/DESIGN.md has the measurements). The
// float path gains from neither and keeps prefetch_ahead.
inline constexpr int kStreamPrefetchBytes = 2 * kPrefetchBytes;
inline void prefetch_stream_ahead(const void* p) {
  __builtin_prefetch(static_cast<const char*>(p) + kStreamPrefetchBytes, 0, 0);
}

#if MKV_SIMD >= 2

struct F8 {
  __m256 v;
};
struct I8 {
  __m256i v;
};

inline F8 f8_zero() { return {_mm256_setzero_ps()}; }
inline F8 f8_set1(float a) { return {_mm256_set1_ps(a)}; }
inline F8 f8_load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void f8_store(float* p, F8 a) { _mm256_storeu_ps(p, a.v); }
inline F8 f8_load_fp16(const uint8_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
}
// Rounds to nearest even (as f32_to_fp16_inline does in portable code).
inline void f8_store_fp16(uint16_t* p, F8 a) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(a.v, _MM_FROUND_TO_NEAREST_INT));
}
// Rounds to nearest even, NaNs kept quiet (as f32_to_bf16_inline does in portable code).
inline void f8_store_bf16(uint16_t* p, F8 a) {
  const __m256i u = _mm256_castps_si256(a.v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);  // each lane < 2^16
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);  // lanes 0-3, 4-7
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}
inline F8 f8_load_bf16(const uint8_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16))};
}
inline F8 operator+(F8 a, F8 b) { return {_mm256_add_ps(a.v, b.v)}; }
inline F8 operator-(F8 a, F8 b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline F8 operator*(F8 a, F8 b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline F8 fmadd(F8 a, F8 b, F8 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline float hsum(F8 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane k of the result = hsum(a[k]), for 8 vectors (a transpose-and-add in 10 shuffles and adds).
inline F8 hsum8(const F8* a) {
  const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(a[0].v, a[1].v), _mm256_hadd_ps(a[2].v, a[3].v));
  const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(a[4].v, a[5].v), _mm256_hadd_ps(a[6].v, a[7].v));
  return {_mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31))};
}

// In place: a[i] lane j becomes a[j] lane i (an 8 x 8 transpose in 24 shuffles).
inline void transpose8(F8* a) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(a[i].v, a[i + 1].v);
    t[i + 1] = _mm256_unpackhi_ps(a[i].v, a[i + 1].v);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    a[i].v = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    a[i + 4].v = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// An 8 x 8 transpose of 16-bit values: out + c * out_stride (values) gets column c of the block
// whose row r is the 8 values at in + r * in_stride (bytes). 24 unpacks.
inline void transpose8_u16(const uint8_t* in, std::size_t in_stride, uint16_t* out, std::size_t out_stride) {
  __m128i a[8], t[8], u[8];
  for (int r = 0; r < 8; ++r) a[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + r * in_stride));
  for (int r = 0; r < 8; r += 2) {  // t[r]: columns 0-3 of rows r, r + 1 interleaved; t[r + 1]: columns 4-7
    t[r] = _mm_unpacklo_epi16(a[r], a[r + 1]);
    t[r + 1] = _mm_unpackhi_epi16(a[r], a[r + 1]);
  }
  for (int h = 0; h < 2; ++h)  // u[4h + k]: columns 2k, 2k + 1 of rows 4h .. 4h + 3
    for (int k = 0; k < 2; ++k) {
      u[4 * h + 2 * k] = _mm_unpacklo_epi32(t[4 * h + k], t[4 * h + k + 2]);
      u[4 * h + 2 * k + 1] = _mm_unpackhi_epi32(t[4 * h + k], t[4 * h + k + 2]);
    }
  for (int k = 0; k < 4; ++k) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * k * out_stride), _mm_unpacklo_epi64(u[k], u[k + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * k + 1) * out_stride), _mm_unpackhi_epi64(u[k], u[k + 4]));
  }
}

inline I8 i8_set1(int32_t a) { return {_mm256_set1_epi32(a)}; }
inline I8 i8_lane_index() { return {_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)}; }
// Eight consecutive bytes, zero- or sign-extended to int32.
inline I8 i8_load_u8(const uint8_t* p) {
  return {_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))};
}
inline I8 i8_load_s8(const uint8_t* p) {
  return {_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))};
}
inline I8 operator&(I8 a, I8 b) { return {_mm256_and_si256(a.v, b.v)}; }
inline I8 operator|(I8 a, I8 b) { return {_mm256_or_si256(a.v, b.v)}; }
inline I8 operator+(I8 a, I8 b) { return {_mm256_add_epi32(a.v, b.v)}; }
inline I8 operator-(I8 a, I8 b) { return {_mm256_sub_epi32(a.v, b.v)}; }
inline I8 operator>>(I8 a, int n) { return {_mm256_srli_epi32(a.v, n)}; }  // logical
inline I8 operator<<(I8 a, int n) { return {_mm256_slli_epi32(a.v, n)}; }
inline I8 operator>>(I8 a, I8 n) { return {_mm256_srlv_epi32(a.v, n.v)}; }  // per-lane, logical
inline F8 to_float(I8 a) { return {_mm256_cvtepi32_ps(a.v)}; }

#else  // portable

struct F8 {
  float v[8];
};
struct I8 {
  int32_t v[8];
};

template <typename Op>
inline F8 f8_map(Op op) {
  F8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = op(i);
  return r;
}
template <typename Op>
inline I8 i8_map(Op op) {
  I8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = op(i);
  return r;
}

inline F8 f8_zero() { return f8_map([](int) { return 0.0f; }); }
inline F8 f8_set1(float a) { return f8_map([a](int) { return a; }); }
inline F8 f8_load(const float* p) { return f8_map([p](int i) { return p[i]; }); }
inline void f8_store(float* p, F8 a) { std::memcpy(p, a.v, sizeof a.v); }
inline F8 f8_load_fp16(const uint8_t* p) {
  return f8_map([p](int i) { return fp16_to_f32_inline(load_u16(p + 2 * i)); });
}
inline void f8_store_fp16(uint16_t* p, F8 a) {
  for (int i = 0; i < 8; ++i) p[i] = f32_to_fp16_inline(a.v[i]);
}
inline void f8_store_bf16(uint16_t* p, F8 a) {
  for (int i = 0; i < 8; ++i) p[i] = f32_to_bf16_inline(a.v[i]);
}
inline F8 f8_load_bf16(const uint8_t* p) {
  return f8_map([p](int i) {
    const uint32_t bits = uint32_t{load_u16(p + 2 * i)} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  });
}
inline F8 operator+(F8 a, F8 b) { return f8_map([&](int i) { return a.v[i] + b.v[i]; }); }
inline F8 operator-(F8 a, F8 b) { return f8_map([&](int i) { return a.v[i] - b.v[i]; }); }
inline F8 operator*(F8 a, F8 b) { return f8_map([&](int i) { return a.v[i] * b.v[i]; }); }
inline F8 fmadd(F8 a, F8 b, F8 c) { return f8_map([&](int i) { return a.v[i] * b.v[i] + c.v[i]; }); }
inline float hsum(F8 a) {
  return ((a.v[0] + a.v[4]) + (a.v[2] + a.v[6])) + ((a.v[1] + a.v[5]) + (a.v[3] + a.v[7]));
}

inline F8 hsum8(const F8* a) {
  return f8_map([a](int k) { return hsum(a[k]); });
}

inline void transpose8(F8* a) {
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) std::swap(a[i].v[j], a[j].v[i]);
}

inline void transpose8_u16(const uint8_t* in, std::size_t in_stride, uint16_t* out, std::size_t out_stride) {
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) std::memcpy(out + c * out_stride + r, in + r * in_stride + 2 * c, 2);
}

inline I8 i8_set1(int32_t a) { return i8_map([a](int) { return a; }); }
inline I8 i8_lane_index() { return i8_map([](int i) { return i; }); }
inline I8 i8_load_u8(const uint8_t* p) { return i8_map([p](int i) { return int32_t{p[i]}; }); }
inline I8 i8_load_s8(const uint8_t* p) {
  return i8_map([p](int i) { return int32_t{static_cast<int8_t>(p[i])}; });
}
inline I8 operator&(I8 a, I8 b) { return i8_map([&](int i) { return a.v[i] & b.v[i]; }); }
inline I8 operator|(I8 a, I8 b) { return i8_map([&](int i) { return a.v[i] | b.v[i]; }); }
inline I8 operator+(I8 a, I8 b) { return i8_map([&](int i) { return a.v[i] + b.v[i]; }); }
inline I8 operator-(I8 a, I8 b) { return i8_map([&](int i) { return a.v[i] - b.v[i]; }); }
inline I8 operator>>(I8 a, int n) {
  return i8_map([&](int i) { return static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) >> n); });
}
inline I8 operator<<(I8 a, int n) {
  return i8_map([&](int i) { return static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) << n); });
}
inline I8 operator>>(I8 a, I8 n) {
  return i8_map([&](int i) {
    return n.v[i] > 31 ? 0 : static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) >> n.v[i]);
  });
}
inline F8 to_float(I8 a) { return f8_map([&](int i) { return static_cast<float>(a.v[i]); }); }

#endif

inline I8 operator&(I8 a, int32_t b) { return a & i8_set1(b); }
inline I8 operator-(I8 a, int32_t b) { return a - i8_set1(b); }

}  // namespace mkv::simd::inline MKV_SIMD_NS
