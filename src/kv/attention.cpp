#include "kv/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kv/nc.h"
#include "ops/attention_kernels.h"
#include "ops/cpu_features.h"
#include "ops/vec.h"

namespace mkv {
namespace {

// Scratch of one worker thread, sized on first use and reused (no allocation per token).
struct AttentionScratch {
  std::vector<float> q;       // (nq, d_k) the item's queries, gathered
  std::vector<float> out;     // (nq, d_v) their outputs
  std::vector<float> logits;  // (nq, kRowChunk) one chunk's softmax logits, then weights
  std::vector<int32_t> visible;  // (nq) rows each query sees
  std::vector<float> lse;        // (nq) log Z_R of each query
  std::vector<float> running_max;   // (nq) largest logit so far
  std::vector<double> running_sum;  // (nq) Σ exp(logit - running_max) so far
};

// Query tokens per work item in prefill: the item's tokens x the GQA group share one pass over
// the head's rows (a row block stays in L1 for all of them) instead of one pass per token.
constexpr int kTokensPerItem = 16;
// Rows per chunk of the online softmax: a chunk's keys, values and logits (64 queries x 512 rows
// x 4 bytes, 128 KiB) stay in L2 between the logits, the softmax and the weighted sum, instead of
// one logit row per query over the whole cache going out to L3 and back at depth.
constexpr int32_t kRowChunk = 512;

inline const void* row_pointer(const void* rows, KvStorage storage, int32_t first, int dim) {
  const std::size_t elem = storage == KvStorage::F32 ? sizeof(float) : sizeof(uint16_t);
  return static_cast<const uint8_t*>(rows) + static_cast<std::size_t>(first) * dim * elem;
}

// Softmax attention of nq queries (q, d_k apart) over the rows of `head`; query j sees its first
// visible[j] rows (visible ascending). Writes f_R of query j to out + j*dv and its log Z_R
// (log-sum-exp of the scaled logits) to lse[j]. Rows go by chunks with a running maximum and sum
// per query (online softmax): a chunk's weights are exp(logit - running max), and the output and
// sum so far are rescaled whenever a chunk raises the maximum.
void attend_queries(const KvHeadView& head, const float* q, int nq, const int32_t* visible, float scale,
                    AttentionScratch& scratch, float* out, float* lse) {
  const int dk = head.head_dim_k, dv = head.head_dim_v;
  const int32_t rows = visible[nq - 1];
  const int32_t chunk = std::min(rows, kRowChunk);
  if (scratch.logits.size() < static_cast<std::size_t>(chunk) * nq) scratch.logits.resize(static_cast<std::size_t>(chunk) * nq);
  scratch.running_max.assign(nq, -std::numeric_limits<float>::infinity());
  scratch.running_sum.assign(nq, 0.0);
  float* logits = scratch.logits.data();
  float* running_max = scratch.running_max.data();
  double* running_sum = scratch.running_sum.data();
  const bool f16 = head.storage != KvStorage::F32;
  std::fill(out, out + static_cast<std::size_t>(nq) * dv, 0.0f);

  int first = 0;  // the first query that sees any row of the chunk (visible is ascending)
  for (int32_t c0 = 0; c0 < rows; c0 += chunk) {
    const int32_t n = std::min(chunk, rows - c0);
    while (visible[first] <= c0) ++first;
    const int nq_chunk = nq - first;
    attn_group_logits(row_pointer(head.keys, head.storage, c0, dk), f16, n, dk, q + first * dk, nq_chunk, dk,
                      scale, logits, chunk);
    for (int j = first; j < nq; ++j) {
      float* l = logits + static_cast<std::size_t>(j - first) * chunk;
      const int32_t seen = std::min(visible[j] - c0, n);  // rows of this chunk query j sees
      const float chunk_max = vec_max(l, seen);
      if (chunk_max > running_max[j]) {
        const float rescale = std::exp(running_max[j] - chunk_max);  // 0 for the first chunk
        running_sum[j] *= rescale;
        for (int c = 0; c < dv; ++c) out[static_cast<std::size_t>(j) * dv + c] *= rescale;
        running_max[j] = chunk_max;
      }
      running_sum[j] += vec_exp_shifted(l, seen, running_max[j]);
      std::fill(l + seen, l + n, 0.0f);  // rows after this query's token
    }
    attn_group_weighted_sum(row_pointer(head.values, head.storage, c0, dv), f16, n, dv, logits, nq_chunk, chunk,
                            out + static_cast<std::size_t>(first) * dv, dv);
  }
  for (int j = 0; j < nq; ++j) {
    const float inv_sum = static_cast<float>(1.0 / running_sum[j]);
    for (int c = 0; c < dv; ++c) out[static_cast<std::size_t>(j) * dv + c] *= inv_sum;
    lse[j] = running_max[j] + static_cast<float>(std::log(running_sum[j]));
  }
}

}  // namespace

void attend_layer(const KvCache& cache, int layer, const AttentionShape& shape, const float* q,
                  int n_tokens, float* out) {
  const KvCacheShape& cs = cache.shape();
  MKV_ASSERT(shape.n_heads % cs.n_kv_heads == 0 && shape.head_dim_k == cs.head_dim_k &&
             shape.head_dim_v == cs.head_dim_v);
  const int group = shape.n_heads / cs.n_kv_heads;
  const int dk = shape.head_dim_k, dv = shape.head_dim_v;
  // One item per (block of up to kTokensPerItem tokens, KV head): all its group's query heads.
  const int blocks = (n_tokens + kTokensPerItem - 1) / kTokensPerItem;
  const int64_t n_items = static_cast<int64_t>(blocks) * cs.n_kv_heads;
  for (int g = 0; g < cs.n_kv_heads; ++g) MKV_ASSERT(cache.length(layer, g) >= n_tokens);
  cpu_variant();  // chooses the kernels if nothing has yet (throws for a bad MOMENTKV_CPU)

  // Waking the thread team costs microseconds: small batches over short caches stay serial.
  const int64_t work = static_cast<int64_t>(n_tokens) * shape.n_heads * static_cast<int64_t>(cache.max_length()) *
                       (shape.head_dim_k + shape.head_dim_v);
  const bool parallel = n_items > 1 && work >= (1 << 18);
  // No exception may leave the parallel region: everything that can throw is checked above.
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t item = 0; item < n_items; ++item) {
    thread_local AttentionScratch scratch;
    const int g = static_cast<int>(item % cs.n_kv_heads);
    const int t0 = static_cast<int>(item / cs.n_kv_heads) * kTokensPerItem;
    const int t1 = std::min(n_tokens, t0 + kTokensPerItem);
    const int nq = (t1 - t0) * group;
    const KvHeadView head = cache.head(layer, g);
    scratch.q.resize(static_cast<std::size_t>(nq) * dk);
    scratch.out.resize(static_cast<std::size_t>(nq) * dv);
    scratch.visible.resize(nq);
    scratch.lse.resize(nq);
    int32_t* visible = scratch.visible.data();
    float* lse = scratch.lse.data();
    for (int t = t0; t < t1; ++t) {  // gather the group's queries, token-major
      const float* q_t = q + (static_cast<std::size_t>(t) * shape.n_heads + g * group) * dk;
      std::copy(q_t, q_t + group * dk, scratch.q.data() + static_cast<std::size_t>(t - t0) * group * dk);
      std::fill(visible + (t - t0) * group, visible + (t - t0 + 1) * group, head.length - n_tokens + t + 1);
    }
    attend_queries(head, scratch.q.data(), nq, visible, shape.scale, scratch, scratch.out.data(), lse);
    const bool blend = cache.nc() && head.moments && head.moments->count() > 0;
    for (int t = t0; t < t1; ++t) {
      const std::size_t th = static_cast<std::size_t>(t) * shape.n_heads + g * group;  // first (token, head)
      for (int j = 0; j < group; ++j) {
        const int k = (t - t0) * group + j;
        float* o = out + (th + j) * dv;
        std::copy(scratch.out.data() + static_cast<std::size_t>(k) * dv, scratch.out.data() + static_cast<std::size_t>(k + 1) * dv, o);
        if (blend) nc_blend(*head.moments, q + (th + j) * dk, shape.scale, lse[k], o);
      }
    }
  }
}

}  // namespace mkv
