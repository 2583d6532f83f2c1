// Quantised block formats (bit-exact with ggml): dequantisation of every computable GgmlType and
// reference quantisers (used by the GGUF writer to make test models), plus fp16/bf16 conversion.
#pragma once

#include <cstdint>

#include "ops/ggml_type.h"

namespace mkv {

float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);   // round to nearest even
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);   // round to nearest even (NaN kept quiet)

// dst[0..n) = values of the first n elements of a row stored in `type`.
// n must be a multiple of the type's block size.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// Encodes n floats (multiple of the block size) into `type`; dst must hold ggml_row_bytes(type, n).
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace mkv
