// Public entry points of quant.h: fp16/bf16 conversion, dequantize_row (through the shared block
// decoders) and quantize_row (through the reference block quantisers).
#include "ops/quant.h"

#include <cstring>

#include "core/error.h"
#include "ops/block_decoders.h"
#include "ops/half.h"
#include "ops/quantizers.h"

namespace mkv {

float fp16_to_f32(uint16_t h) { return fp16_to_f32_inline(h); }
uint16_t f32_to_fp16(float f) { return f32_to_fp16_inline(f); }
float bf16_to_f32(uint16_t h) { return bf16_to_f32_inline(h); }
uint16_t f32_to_bf16(float f) { return f32_to_bf16_inline(f); }

void decoders::throw_unsupported_type(GgmlType type) {
  fail("tensor type {} is not supported by the kernels", ggml_type_info(type).name);
}

namespace {

void check_row_length(GgmlType type, int64_t n) {
  const auto& info = ggml_type_info(type);
  MKV_CHECK(n >= 0 && n % info.block_size == 0, "row of {} values is not a whole number of {} blocks ({})",
            n, info.name, info.block_size);
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  check_row_length(type, n);
  const auto* bytes = static_cast<const uint8_t*>(src);
  decoders::visit_decoder(type, [&]<typename Decoder>() {
    const int64_t n_blocks = n / Decoder::kBlockSize;
    for (int64_t b = 0; b < n_blocks; ++b) {
      float* out = dst + b * Decoder::kBlockSize;
      Decoder::decode(bytes + b * Decoder::kBlockBytes, [out](int g, simd::F8 v) { simd::f8_store(out + 8 * g, v); });
    }
    for (int64_t i = n_blocks * Decoder::kBlockSize; i < n; ++i)  // float types: the last < 8 values
      dst[i] = decoders::float_type_value(type, bytes, i);
  });
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  check_row_length(type, n);
  auto* out = static_cast<uint8_t*>(dst);
  const auto& info = ggml_type_info(type);
  auto blocks = [&](void (*quantize_block)(const float*, uint8_t*)) {
    for (int64_t b = 0; b < n / info.block_size; ++b)
      quantize_block(src + b * info.block_size, out + b * info.block_bytes);
  };
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) quantizers::store_u16(out + 2 * i, f32_to_fp16_inline(src[i]));
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) quantizers::store_u16(out + 2 * i, f32_to_bf16_inline(src[i]));
      return;
    case GgmlType::Q8_0: return blocks(quantizers::q8_0);
    case GgmlType::Q4_0: return blocks(quantizers::q4_0);
    case GgmlType::Q4_1: return blocks(quantizers::q4_1);
    case GgmlType::Q5_0: return blocks(quantizers::q5_0);
    case GgmlType::Q5_1: return blocks(quantizers::q5_1);
    case GgmlType::Q4_K: return blocks(quantizers::q4_k);
    case GgmlType::Q5_K: return blocks(quantizers::q5_k);
    case GgmlType::Q6_K: return blocks(quantizers::q6_k);
    default: fail("cannot quantise to tensor type {}", ggml_type_info(type).name);
  }
}

}  // namespace mkv
