// Checks the arguments, takes head sizes that are not a multiple of 8 (tiny test models) with
// plain loops, and sends the rest to the kernel variant in use (attention_float_kernels.h).
#include "ops/attention_kernels.h"

#include "core/error.h"
#include "ops/half.h"
#include "ops/kernel_table.h"

namespace mkv {
namespace {

inline float load_one(const void* rows, bool f16, std::size_t offset) {
  if (f16) return fp16_to_f32_inline(static_cast<const uint16_t*>(rows)[offset]);
  return static_cast<const float*>(rows)[offset];
}

}  // namespace

void attn_group_logits(const void* keys, bool f16, int32_t n_rows, int dim, const float* q, int nq,
                       int64_t q_stride, float scale, float* logits, int64_t logit_stride) {
  MKV_ASSERT(nq >= 1 && n_rows >= 0 && dim >= 1);
  if (dim % 8 == 0)
    return kernel_table().attn_logits(keys, f16, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  for (int j = 0; j < nq; ++j)
    for (int32_t i = 0; i < n_rows; ++i) {
      float s = 0.0f;
      for (int c = 0; c < dim; ++c) s += q[j * q_stride + c] * load_one(keys, f16, static_cast<std::size_t>(i) * dim + c);
      logits[j * logit_stride + i] = scale * s;
    }
}

void attn_group_weighted_sum(const void* values, bool f16, int32_t n_rows, int dim, const float* w, int nq,
                             int64_t w_stride, float* out, int64_t out_stride) {
  MKV_ASSERT(nq >= 1 && n_rows >= 0 && dim >= 1);
  if (dim % 8 == 0)
    return kernel_table().attn_weighted_sum(values, f16, n_rows, dim, w, nq, w_stride, out, out_stride);
  for (int j = 0; j < nq; ++j)
    for (int32_t i = 0; i < n_rows; ++i)
      for (int c = 0; c < dim; ++c)
        out[j * out_stride + c] += w[j * w_stride + i] * load_one(values, f16, static_cast<std::size_t>(i) * dim + c);
}

}  // namespace mkv
