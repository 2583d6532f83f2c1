// Attention inner loops over one KV head for a group of query heads (GQA): each cache row is
// read once for all the group's queries, so decode at depth streams the cache once per layer
// instead of once per query head. Rows are float32 or fp16. The kernels are those of the variant
// in use (cpu_features.h, MOMENTKV_CPU), like the matrix products'. Any number of queries per call: callers pass every query that shares the rows (a
// GQA group, and in prefill several tokens of it) so that each row is read once for all.
#pragma once

#include <cstdint>

namespace mkv {

// logits[j * logit_stride + i] = scale * dot(q + j * q_stride, key row i)  for i < n_rows, j < nq.
// keys: (n_rows, dim) float32, or fp16 bit patterns when f16.
void attn_group_logits(const void* keys, bool f16, int32_t n_rows, int dim, const float* q, int nq,
                       int64_t q_stride, float scale, float* logits, int64_t logit_stride);

// out[j * out_stride + c] += sum_i w[j * w_stride + i] * value row i [c]   for j < nq, c < dim.
void attn_group_weighted_sum(const void* values, bool f16, int32_t n_rows, int dim, const float* w, int nq,
                             int64_t w_stride, float* out, int64_t out_stride);

}  // namespace mkv
