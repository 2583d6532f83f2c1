// Inline fp16 / bf16 <-> float32 conversions (private to src/ops; the public wrappers are in
// quant.h). MKV_SIMD >= 2 (simd_level.h): F16C instructions; portable code: bit manipulation with
// the same results (round to nearest even, subnormals kept, NaN made quiet with its top payload bits).
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/simd_level.h"

namespace mkv::inline MKV_SIMD_NS {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Little-endian 16-bit load from an unaligned block field.
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}
// Little-endian 32-bit load from an unaligned block field.
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float fp16_to_f32_inline(uint16_t h) {
#if MKV_SIMD >= 2
  return _cvtsh_ss(h);
#else
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return f32_from_bits(f32_bits(magnitude) | sign);
  }
  if (exponent == 31) return f32_from_bits(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  return f32_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
#endif
}

inline uint16_t f32_to_fp16_inline(float f) {
#if MKV_SIMD >= 2
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  const uint32_t u = f32_bits(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet bit set, top 9 payload bits kept (as F16C does)
    return sign | 0x7e00u | static_cast<uint16_t>((magnitude >> 13) & 0x3ffu);
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (incl. inf) rounds to inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a half subnormal (units of 2^-24). Adding 0.5 makes the float unit 2^-24, so the
    // float addition itself rounds to nearest even; the low mantissa bits are then the result.
    const float shifted = f32_from_bits(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(f32_bits(shifted) - f32_bits(0.5f));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const uint32_t odd = (magnitude >> 13) & 1u;
  return sign | static_cast<uint16_t>((magnitude - (112u << 23) + 0xfffu + odd) >> 13);
#endif
}

inline float bf16_to_f32_inline(uint16_t h) { return f32_from_bits(uint32_t{h} << 16); }

inline uint16_t f32_to_bf16_inline(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace mkv::inline MKV_SIMD_NS
