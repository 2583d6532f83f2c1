#include "kv/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kv/nc.h"
#include "ops/attention_kernels.h"
#include "ops/vec.h"

namespace mkv {
namespace {

// Scratch of one worker thread, sized on first use and reused (no allocation per token).
struct AttentionScratch {
  std::vector<float> q;       // (nq, d_k) the item's queries, gathered
  std::vector<float> out;     // (nq, d_v) their outputs
  std::vector<float> logits;  // (nq, rows) softmax logits, then weights
  std::vector<int32_t> visible;  // (nq) rows each query sees
  std::vector<float> lse;        // (nq) log Z_R of each query
};

// Query tokens per work item in prefill: the item's tokens x the GQA group share one pass over
// the head's rows (a row block stays in L1 for all of them) instead of one pass per token.
constexpr int kTokensPerItem = 16;

// Softmax attention of nq queries (q, d_k apart) over the rows of `head`; query j sees its first
// visible[j] rows (visible ascending). Writes f_R of query j to out + j*dv and its log Z_R
// (log-sum-exp of the scaled logits) to lse[j].
void attend_queries(const KvHeadView& head, const float* q, int nq, const int32_t* visible, float scale,
                    std::vector<float>& logit_buffer, float* out, float* lse) {
  const int dk = head.head_dim_k, dv = head.head_dim_v;
  const int32_t rows = visible[nq - 1];
  const std::size_t stride = static_cast<std::size_t>(rows);
  if (logit_buffer.size() < stride * nq) logit_buffer.resize(stride * nq);
  float* logits = logit_buffer.data();
  const bool f16 = head.storage != KvStorage::F32;

  attn_group_logits(head.keys, f16, rows, dk, q, nq, dk, scale, logits, static_cast<int64_t>(stride));
  for (int j = 0; j < nq; ++j) {
    float* l = logits + j * stride;
    const float max_logit = vec_max(l, visible[j]);
    const double sum = vec_exp_shifted(l, visible[j], max_logit);
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int32_t i = 0; i < visible[j]; ++i) l[i] *= inv_sum;
    std::fill(l + visible[j], l + rows, 0.0f);  // rows after this query's token
    lse[j] = max_logit + static_cast<float>(std::log(sum));
  }
  std::fill(out, out + static_cast<std::size_t>(nq) * dv, 0.0f);
  attn_group_weighted_sum(head.values, f16, rows, dv, logits, nq, static_cast<int64_t>(stride), out, dv);
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
    attend_queries(head, scratch.q.data(), nq, visible, shape.scale, scratch.logits, scratch.out.data(), lse);
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
