// Reference block quantisers (private to src/ops, dispatched by quantize_row). Each encodes one
// block of values x into `block` (the type's block size / byte size). Scales come from the block's
// range (abs-max for symmetric types, min/max for types with a min) and are rounded to their
// stored precision before the codes are chosen, so codes are nearest for the scales as decoded.
#pragma once

#include <cstdint>

namespace mkv::quantizers {

void q8_0(const float* x, uint8_t* block);  // 32 values
void q4_0(const float* x, uint8_t* block);  // 32 values
void q4_1(const float* x, uint8_t* block);  // 32 values
void q5_0(const float* x, uint8_t* block);  // 32 values
void q5_1(const float* x, uint8_t* block);  // 32 values
void q4_k(const float* x, uint8_t* block);  // 256 values
void q5_k(const float* x, uint8_t* block);  // 256 values
void q6_k(const float* x, uint8_t* block);  // 256 values

// Shared helpers.
inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}
// round(v) clamped to [lo, hi]; NaN-free input assumed.
int round_clamp(float v, int lo, int hi);

// The scale d for codes round(x / d) clamped to [min_code, max_code] that minimises the squared
// error over n values, searched among shrinkings of the abs-max scale (trading a little clipping
// of the extreme value for finer steps). With stored_as_fp16, candidates are rounded to fp16 first
// and the result is the fp16 bits' value.
float best_symmetric_scale(const float* x, int n, int min_code, int max_code, bool stored_as_fp16);

}  // namespace mkv::quantizers
