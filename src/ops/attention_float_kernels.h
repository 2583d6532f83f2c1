// The cached-attention kernels of one kernel variant (private to src/ops): included only by
// kernel_variant.h, after matmul_float_kernels.h, whose GEMM computes the logits of prefill
// batches. Entry points: attn_logits() and attn_weighted_sum() (the KernelTable signatures; the
// public functions and their contract are in attention_kernels.h).
//
// Decode (a few queries per call) is memory-bound at depth: keys in 8-row blocks reduced by hsum8,
// and the weighted sum in 16-row blocks whose first pass prefetches the next block. Prefill is
// compute-bound: the logits are the product of the keys (a float32 or fp16 matrix of n_rows x dim)
// with the queries, run_item's packed-panel GEMM (for more than kBlockedMaxQueries queries), and
// the weighted sum keeps kSumQueries queries x 16 values in registers.
#pragma once

#include <algorithm>

#include "ops/matmul_float_kernels.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

constexpr int kSumQueries = 6;  // queries per register tile of the weighted sum
// Value rows per block of the weighted sum, which each query chunk's column passes read while it
// stays in L1. Prefill (more than kSumQueries queries) reads each block many times: 32 rows halve
// the passes' accumulator loads and stores. Decode reads it once, from memory at depth: 16 rows
// keep the passes, each of which touches one line per row, close enough together that the rows'
// lines arrive as one stream.
constexpr int32_t kPrefillRowBlock = 32;
constexpr int32_t kDecodeRowBlock = 16;
// Logits of up to this many queries (decode with GQA groups of up to 12, a few tokens of a smaller
// group) take the row-blocked kernel, which reads each key row once and packs nothing; more
// queries repay transposing the keys into the GEMM's panels.
constexpr int kBlockedMaxQueries = 12;

inline F8 load_row8(const void* rows, bool f16, std::size_t offset) {
  if (f16) return simd::f8_load_fp16(static_cast<const uint8_t*>(rows) + 2 * offset);
  return simd::f8_load(static_cast<const float*>(rows) + offset);
}
// Prefetches every cache line of rows [first, first + n) (dim values each), `ahead` bytes further
// on: at depth the head's rows come from memory, streamed once per item, and the hardware
// prefetcher stops at 4 KiB pages.
inline void prefetch_rows(const void* rows, bool f16, std::size_t first, int32_t n, int dim, std::size_t ahead = 0) {
  const std::size_t elem = f16 ? 2 : 4;
  const auto* p = static_cast<const uint8_t*>(rows) + first * dim * elem + ahead;
  for (std::size_t off = 0; off < n * dim * elem; off += 64) __builtin_prefetch(p + off);
}

// Blocks of 8 key rows: for each query, 8 accumulators (one per row) over the head dimension,
// reduced together by hsum8 into 8 logits; the block stays in L1 while every query reads it.
template <bool F16>
void logits_blocked(const void* keys, int32_t n_rows, int dim, const float* q, int nq, int64_t q_stride,
                    float scale, float* logits, int64_t logit_stride) {
  int32_t i = 0;
  for (; i + 8 <= n_rows; i += 8) {
    const std::size_t block = static_cast<std::size_t>(i) * dim;
    prefetch_rows(keys, F16, i, 8, dim, simd::kPrefetchBytes);
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
// columns from c: NQ x V accumulators in registers, each broadcast weight feeding V FMAs. With
// PREFETCH, row i + (i1 - i0) (a block on) is prefetched as row i is read: spread over the
// block's first pass rather than issued in one burst, the prefetches keep line-fill buffers free
// for the loads.
template <int NQ, int V, bool F16, bool PREFETCH>
void add_weighted_columns(const void* values, int32_t i0, int32_t i1, int dim, int c, const float* w,
                          int64_t w_stride, float* out, int64_t out_stride) {
  F8 acc[NQ][V];
  for (auto& row : acc)
    for (auto& a : row) a = simd::f8_zero();
  for (int32_t i = i0; i < i1; ++i) {
    if (PREFETCH) prefetch_rows(values, F16, static_cast<std::size_t>(i) + (i1 - i0), 1, dim);
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

// One row block for NQ queries: columns two vectors at a time, then any last single vector. With
// `prefetch` the first pass prefetches the next block.
template <int NQ, bool F16>
void add_weighted_rows(const void* values, int32_t i0, int32_t i1, int dim, const float* w, int64_t w_stride,
                       float* out, int64_t out_stride, bool prefetch) {
  int c = 0;
  if (prefetch) {
    if (dim >= 16)
      add_weighted_columns<NQ, 2, F16, true>(values, i0, i1, dim, c, w, w_stride, out, out_stride), c = 16;
    else
      add_weighted_columns<NQ, 1, F16, true>(values, i0, i1, dim, c, w, w_stride, out, out_stride), c = 8;
  }
  for (; c + 16 <= dim; c += 16)
    add_weighted_columns<NQ, 2, F16, false>(values, i0, i1, dim, c, w, w_stride, out, out_stride);
  for (; c < dim; c += 8) add_weighted_columns<NQ, 1, F16, false>(values, i0, i1, dim, c, w, w_stride, out, out_stride);
}

template <bool F16>
void weighted_sum_blocked(const void* values, int32_t n_rows, int dim, const float* w, int nq, int64_t w_stride,
                          float* out, int64_t out_stride) {
  // Decode: the first block is prefetched here and each block's pass prefetches the next. Prefill
  // (rows mostly in cache from the batch's own keys and the logits): each block kPrefetchBytes on.
  const bool decode = nq <= kSumQueries;
  const int32_t block = decode ? kDecodeRowBlock : kPrefillRowBlock;
  if (decode) prefetch_rows(values, F16, 0, std::min(n_rows, block), dim);
  for (int32_t i0 = 0; i0 < n_rows; i0 += block) {
    const int32_t i1 = std::min(n_rows, i0 + block);
    if (!decode) prefetch_rows(values, F16, i0, i1 - i0, dim, simd::kPrefetchBytes);
    for (int j0 = 0; j0 < nq; j0 += kSumQueries) {
      const float* wj = w + j0 * w_stride;
      float* oj = out + j0 * out_stride;
      switch (std::min(kSumQueries, nq - j0)) {
        case 1: add_weighted_rows<1, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, decode); break;
        case 2: add_weighted_rows<2, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, decode); break;
        case 3: add_weighted_rows<3, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, decode); break;
        case 4: add_weighted_rows<4, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, decode); break;
        case 5: add_weighted_rows<5, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, decode); break;
        default: add_weighted_rows<6, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, decode); break;
      }
    }
  }
}

// KernelTable::attn_logits: logits[j * logit_stride + i] = scale * dot(q_j, key row i); dim % 8 == 0.
void attn_logits(const void* keys, bool f16, int32_t n_rows, int dim, const float* q, int nq, int64_t q_stride,
                 float scale, float* logits, int64_t logit_stride) {
  if (nq > kBlockedMaxQueries) {
    const Item item{static_cast<const uint8_t*>(keys), static_cast<std::size_t>(dim) * (f16 ? 2 : 4), q, logits,
                    q_stride, logit_stride, dim, 0, n_rows, 0, nq};
    if (f16)
      run_item<decoders::F16>(GgmlType::F16, item);
    else
      run_item<decoders::F32>(GgmlType::F32, item);
    for (int j = 0; j < nq; ++j)
      for (int32_t i = 0; i < n_rows; ++i) logits[j * logit_stride + i] *= scale;
  } else if (f16) {
    logits_blocked<true>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  } else {
    logits_blocked<false>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  }
}

// KernelTable::attn_weighted_sum: out[j * out_stride + c] += Σ_i w[j * w_stride + i] · value row i [c];
// dim % 8 == 0.
void attn_weighted_sum(const void* values, bool f16, int32_t n_rows, int dim, const float* w, int nq,
                       int64_t w_stride, float* out, int64_t out_stride) {
  if (f16)
    weighted_sum_blocked<true>(values, n_rows, dim, w, nq, w_stride, out, out_stride);
  else
    weighted_sum_blocked<false>(values, n_rows, dim, w, nq, w_stride, out, out_stride);
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
