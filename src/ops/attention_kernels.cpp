#include "ops/attention_kernels.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "ops/simd.h"

namespace mkv {
namespace {

using simd::F8;

constexpr int kSumQueries = 6;  // queries per register tile of the weighted sum
// Value rows per block of the weighted sum, which each query chunk's column passes read while it
// stays in L1. Prefill (more than kSumQueries queries) reads each block many times: 32 rows halve
// the passes' accumulator loads and stores. Decode reads it once, from memory at depth: 16 rows
// keep the passes, each of which touches one line per row, close enough together that the rows'
// lines arrive as one stream.
constexpr int32_t kPrefillRowBlock = 32;
constexpr int32_t kDecodeRowBlock = 16;

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

// Prefill (many queries per call): the logits as a small GEMM. Each block of kPanelRows key rows is
// transposed once into a (dim, kPanelRows) float32 panel; tiles of kPanelQueries queries x
// kPanelRows rows then accumulate over the head dimension with broadcast query values: 12
// accumulators, 2 panel loads and 6 broadcasts per step and no horizontal sums, where the
// row-blocked kernel needs 9 loads per 8 FMAs and an hsum8 per 8 logits.
constexpr int32_t kPanelRows = 16;
constexpr int kPanelQueries = 6;
constexpr int kPackedMinQueries = 8;  // fewer queries do not repay the transpose

// panel[c * kPanelRows + r] = key row (i + r) [c] for r < n, 0 for n <= r < kPanelRows.
template <bool F16>
void pack_key_panel(const void* keys, int32_t i, int32_t n, int dim, float* panel) {
  for (int half = 0; half < kPanelRows / 8; ++half)
    for (int c = 0; c < dim; c += 8) {
      F8 t[8];
      for (int r = 0; r < 8; ++r) {
        const int32_t row = half * 8 + r;
        t[r] = row < n ? load_row8(keys, F16, static_cast<std::size_t>(i + row) * dim + c) : simd::f8_zero();
      }
      simd::transpose8(t);
      for (int k = 0; k < 8; ++k) simd::f8_store(panel + (c + k) * kPanelRows + half * 8, t[k]);
    }
}

// logits[j * logit_stride + r] = scale * dot(q_j, panel row r) for j < NQ, r < n (n ≤ kPanelRows).
template <int NQ>
void panel_tile(const float* panel, int dim, const float* q, int64_t q_stride, float scale, float* logits,
                int64_t logit_stride, int32_t n) {
  static_assert(kPanelRows == 16);
  F8 acc[NQ][2];
  for (auto& row : acc) row[0] = row[1] = simd::f8_zero();
  for (int c = 0; c < dim; ++c) {
    const F8 b0 = simd::f8_load(panel + c * kPanelRows), b1 = simd::f8_load(panel + c * kPanelRows + 8);
    for (int j = 0; j < NQ; ++j) {
      const F8 a = simd::f8_set1(q[j * q_stride + c]);
      acc[j][0] = simd::fmadd(a, b0, acc[j][0]);
      acc[j][1] = simd::fmadd(a, b1, acc[j][1]);
    }
  }
  const F8 s = simd::f8_set1(scale);
  for (int j = 0; j < NQ; ++j) {
    float* l = logits + j * logit_stride;
    if (n == kPanelRows) {
      simd::f8_store(l, acc[j][0] * s);
      simd::f8_store(l + 8, acc[j][1] * s);
    } else {
      alignas(32) float tile[kPanelRows];
      simd::f8_store(tile, acc[j][0] * s);
      simd::f8_store(tile + 8, acc[j][1] * s);
      std::copy(tile, tile + n, l);
    }
  }
}

template <bool F16>
void logits_packed(const void* keys, int32_t n_rows, int dim, const float* q, int nq, int64_t q_stride, float scale,
                   float* logits, int64_t logit_stride) {
  thread_local std::vector<float> panel_buffer;  // (dim, kPanelRows)
  panel_buffer.resize(static_cast<std::size_t>(dim) * kPanelRows);
  float* panel = panel_buffer.data();
  for (int32_t i = 0; i < n_rows; i += kPanelRows) {
    const int32_t n = std::min(kPanelRows, n_rows - i);
    prefetch_rows(keys, F16, i, n, dim, simd::kPrefetchBytes);
    pack_key_panel<F16>(keys, i, n, dim, panel);
    float* l = logits + i;
    int j = 0;
    for (; j + kPanelQueries <= nq; j += kPanelQueries)
      panel_tile<kPanelQueries>(panel, dim, q + j * q_stride, q_stride, scale, l + j * logit_stride, logit_stride, n);
    const float* qj = q + j * q_stride;
    float* lj = l + j * logit_stride;
    switch (nq - j) {
      case 1: panel_tile<1>(panel, dim, qj, q_stride, scale, lj, logit_stride, n); break;
      case 2: panel_tile<2>(panel, dim, qj, q_stride, scale, lj, logit_stride, n); break;
      case 3: panel_tile<3>(panel, dim, qj, q_stride, scale, lj, logit_stride, n); break;
      case 4: panel_tile<4>(panel, dim, qj, q_stride, scale, lj, logit_stride, n); break;
      case 5: panel_tile<5>(panel, dim, qj, q_stride, scale, lj, logit_stride, n); break;
      default: break;
    }
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
      const bool prefetch = decode;
      switch (std::min(kSumQueries, nq - j0)) {
        case 1: add_weighted_rows<1, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, prefetch); break;
        case 2: add_weighted_rows<2, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, prefetch); break;
        case 3: add_weighted_rows<3, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, prefetch); break;
        case 4: add_weighted_rows<4, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, prefetch); break;
        case 5: add_weighted_rows<5, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, prefetch); break;
        default: add_weighted_rows<6, F16>(values, i0, i1, dim, wj, w_stride, oj, out_stride, prefetch); break;
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
  if (nq >= kPackedMinQueries) {
    if (f16)
      logits_packed<true>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
    else
      logits_packed<false>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  } else if (f16) {
    logits_blocked<true>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  } else {
    logits_blocked<false>(keys, n_rows, dim, q, nq, q_stride, scale, logits, logit_stride);
  }
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
