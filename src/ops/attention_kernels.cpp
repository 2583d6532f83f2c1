#include "ops/attention_kernels.h"

#include <algorithm>

#include "core/error.h"
#include "ops/simd.h"

namespace mkv {
namespace {

using simd::F8;

constexpr int32_t kRowBlock = 32;  // value rows per pass of the weighted sum (≤ 16 KiB at dim 128)
constexpr int kSumQueries = 4;     // queries per register tile of the weighted sum

inline F8 load_row8(const void* rows, bool f16, std::size_t offset) {
  if (f16) return simd::f8_load_fp16(static_cast<const uint8_t*>(rows) + 2 * offset);
  return simd::f8_load(static_cast<const float*>(rows) + offset);
}
// Prefetches every cache line of rows [first, first + n) (dim values each), kPrefetchBytes ahead:
// at depth the head's rows come from memory, streamed once per item.
inline void prefetch_rows(const void* rows, bool f16, std::size_t first, int32_t n, int dim) {
  const std::size_t elem = f16 ? 2 : 4;
  const auto* p = static_cast<const uint8_t*>(rows) + first * dim * elem;
  for (std::size_t off = 0; off < n * dim * elem; off += 64) simd::prefetch_ahead(p + off);
}
inline float load_one(const void* rows, bool f16, std::size_t offset) {
  if (f16) return fp16_to_f32_inline(static_cast<const uint16_t*>(rows)[offset]);
  return static_cast<const float*>(rows)[offset];
}

// Blocks of 8 key rows: for each query, 8 accumulators (one per row) over the head dimension,
// reduced together by hsum8 into 8 logits; the block stays in L1 while every query reads it.
template <bool F16>
void logits_blocked(const void* keys, int32_t n_rows, int dim, const float* q, int nq, int64_t q_stride,
                    float scale, float* logits, int64_t logit_stride) {
  int32_t i = 0;
  for (; i + 8 <= n_rows; i += 8) {
    const std::size_t block = static_cast<std::size_t>(i) * dim;
    prefetch_rows(keys, F16, i, 8, dim);
    for (int j = 0; j < nq; ++j) {
      F8 acc[8];
      for (auto& a : acc) a = simd::f8_zero();
      for (int c = 0; c < dim; c += 8) {
        const F8 qv = simd::f8_load(q + j * q_stride + c);
        for (int r = 0; r < 8; ++r) acc[r] = simd::fmadd(load_row8(keys, F16, block + r * dim + c), qv, acc[r]);
      }
      simd::f8_store(logits + j * logit_stride + i, simd::hsum8(acc) * simd::f8_set1(scale));
    }
  }
  for (; i < n_rows; ++i)  // the last rows, one at a time
    for (int j = 0; j < nq; ++j) {
      F8 acc = simd::f8_zero();
      for (int c = 0; c < dim; c += 8)
        acc = simd::fmadd(load_row8(keys, F16, static_cast<std::size_t>(i) * dim + c), simd::f8_load(q + j * q_stride + c), acc);
      logits[j * logit_stride + i] = scale * simd::hsum(acc);
    }
}

// out[j][c + 8u + lane] += Σ_{i0 ≤ i < i1} w[j][i] · value row i, for NQ queries and V vectors of
// columns from c: NQ x V accumulators in registers, each broadcast weight feeding V FMAs.
template <int NQ, int V, bool F16>
void add_weighted_columns(const void* values, int32_t i0, int32_t i1, int dim, int c, const float* w,
                          int64_t w_stride, float* out, int64_t out_stride) {
  F8 acc[NQ][V];
  for (auto& row : acc)
    for (auto& a : row) a = simd::f8_zero();
  for (int32_t i = i0; i < i1; ++i) {
    F8 v[V];
    for (int u = 0; u < V; ++u) v[u] = load_row8(values, F16, static_cast<std::size_t>(i) * dim + c + 8 * u);
    for (int j = 0; j < NQ; ++j) {
      const F8 wj = simd::f8_set1(w[j * w_stride + i]);
      for (int u = 0; u < V; ++u) acc[j][u] = simd::fmadd(wj, v[u], acc[j][u]);
    }
  }
  for (int j = 0; j < NQ; ++j)
    for (int u = 0; u < V; ++u) {
      float* o = out + j * out_stride + c + 8 * u;
      simd::f8_store(o, simd::f8_load(o) + acc[j][u]);
    }
}

// One row block for NQ queries: columns two vectors at a time, then any last single vector.
template <int NQ, bool F16>
void add_weighted_rows(const void* values, int32_t i0, int32_t i1, int dim, const float* w, int64_t w_stride,
                       float* out, int64_t out_stride) {
  int c = 0;
  for (; c + 16 <= dim; c += 16) add_weighted_columns<NQ, 2, F16>(values, i0, i1, dim, c, w, w_stride, out, out_stride);
  for (; c < dim; c += 8) add_weighted_columns<NQ, 1, F16>(values, i0, i1, dim, c, w, w_stride, out, out_stride);
}

template <bool F16>
void weighted_sum_blocked(const void* values, int32_t n_rows, int dim, const float* w, int nq, int64_t w_stride,
                          float* out, int64_t out_stride) {
  for (int32_t i0 = 0; i0 < n_rows; i0 += kRowBlock) {  // the block stays in L1 for all queries
    const int32_t i1 = std::min(n_rows, i0 + kRowBlock);
    prefetch_rows(values, F16, i0, i1 - i0, dim);
    for (int j0 = 0; j0 < nq; j0 += kSumQueries) {
      const float* wj = w + j0 * w_stride;
      float* oj = out + j0 * out_stride;
      switch (std::min(kSumQueries, nq - j0)) {
        case 1: add_weighted_rows<1, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride); break;
        case 2: add_weighted_rows<2, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride); break;
        case 3: add_weighted_rows<3, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride); break;
        default: add_weighted_rows<4, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride); break;
      }
    }
  }
}

}  // namespace

void attn_group_logits(const void* keys, bool f16, int32_t n_rows, int dim, const float* q, int nq,
                       int64_t q_stride, float scale, float* logits, int64_t logit_stride) {
  MKV_ASSERT(nq >= 1);
  if (dim % 8 != 0) {  // odd head sizes (tiny test models): plain loops
    for (int j = 0; j < nq; ++j)
      for (int32_t i = 0; i < n_rows; ++i) {
        float s = 0.0f;
        for (int c = 0; c < dim; ++c) s += q[j * q_stride + c] * load_one(keys, f16, static_cast<std::size_t>(i) * dim + c);
        logits[j * logit_stride + i] = scale * s;
      }
    return;
  }
  if (f16)
    logits_blocked<true>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  else
    logits_blocked<false>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
}

void attn_group_weighted_sum(const void* values, bool f16, int32_t n_rows, int dim, const float* w, int nq,
                             int64_t w_stride, float* out, int64_t out_stride) {
  MKV_ASSERT(nq >= 1);
  if (dim % 8 != 0) {
    for (int j = 0; j < nq; ++j)
      for (int32_t i = 0; i < n_rows; ++i)
        for (int c = 0; c < dim; ++c)
          out[j * out_stride + c] += w[j * w_stride + i] * load_one(values, f16, static_cast<std::size_t>(i) * dim + c);
    return;
  }
  if (f16)
    weighted_sum_blocked<true>(values, n_rows, dim, w, nq, w_stride, out, out_stride);
  else
    weighted_sum_blocked<false>(values, n_rows, dim, w, nq, w_stride, out, out_stride);
}

}  // namespace mkv
