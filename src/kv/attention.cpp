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
  std::vector<float> logits;  // (group, n_visible) softmax logits, then weights
};

constexpr int kMaxGroupPass = 8;  // query heads handled per pass over the cache rows

// Softmax attention of nq query heads (q, dk apart) over the first n_visible rows of `head`,
// reading every row once for all of them; writes f_R of head j to out + j*dv and its log Z_R
// (log-sum-exp of the scaled logits) to lse[j].
void attend_group(const KvHeadView& head, const float* q, int nq, int32_t n_visible, float scale,
                  AttentionScratch& scratch, float* out, float* lse) {
  const int dk = head.head_dim_k, dv = head.head_dim_v;
  const std::size_t stride = static_cast<std::size_t>(n_visible);
  if (scratch.logits.size() < stride * nq) scratch.logits.resize(stride * nq);
  float* logits = scratch.logits.data();
  const bool f16 = head.storage != KvStorage::F32;

  attn_group_logits(head.keys, f16, n_visible, dk, q, nq, dk, scale, logits, static_cast<int64_t>(stride));
  for (int j = 0; j < nq; ++j) {
    float* l = logits + j * stride;
    float max_logit = -INFINITY;
    for (int32_t i = 0; i < n_visible; ++i) max_logit = std::max(max_logit, l[i]);
    double sum = 0.0;
    for (int32_t i = 0; i < n_visible; ++i) {
      l[i] = std::exp(l[i] - max_logit);
      sum += l[i];
    }
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int32_t i = 0; i < n_visible; ++i) l[i] *= inv_sum;
    lse[j] = max_logit + static_cast<float>(std::log(sum));
  }
  std::fill(out, out + static_cast<std::size_t>(nq) * dv, 0.0f);
  attn_group_weighted_sum(head.values, f16, n_visible, dv, logits, nq, static_cast<int64_t>(stride), out, dv);
}

}  // namespace

void attend_layer(const KvCache& cache, int layer, const AttentionShape& shape, const float* q,
                  int n_tokens, float* out) {
  const KvCacheShape& cs = cache.shape();
  MKV_ASSERT(shape.n_heads % cs.n_kv_heads == 0 && shape.head_dim_k == cs.head_dim_k &&
             shape.head_dim_v == cs.head_dim_v);
  const int group = shape.n_heads / cs.n_kv_heads;
  // One item per (token, KV head, pass of up to kMaxGroupPass query heads of its group).
  const int passes = (group + kMaxGroupPass - 1) / kMaxGroupPass;
  const int64_t n_items = static_cast<int64_t>(n_tokens) * cs.n_kv_heads * passes;
  for (int g = 0; g < cs.n_kv_heads; ++g) MKV_ASSERT(cache.length(layer, g) >= n_tokens);

  // Waking the thread team costs microseconds: small batches over short caches stay serial.
  const int64_t work = static_cast<int64_t>(n_tokens) * shape.n_heads * static_cast<int64_t>(cache.max_length()) *
                       (shape.head_dim_k + shape.head_dim_v);
  const bool parallel = n_items > 1 && work >= (1 << 18);
  // No exception may leave the parallel region: everything that can throw is checked above.
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t item = 0; item < n_items; ++item) {
    thread_local AttentionScratch scratch;
    const int t = static_cast<int>(item / (cs.n_kv_heads * passes));
    const int g = static_cast<int>(item / passes % cs.n_kv_heads);
    const int h0 = g * group + static_cast<int>(item % passes) * kMaxGroupPass;
    const int nq = std::min(kMaxGroupPass, (g + 1) * group - h0);
    const KvHeadView head = cache.head(layer, g);
    const int32_t n_visible = head.length - n_tokens + t + 1;
    const std::size_t th = static_cast<std::size_t>(t) * shape.n_heads + h0;  // first (token, head)
    const float* q_th = q + th * shape.head_dim_k;
    float* out_th = out + th * shape.head_dim_v;
    float lse[kMaxGroupPass];
    attend_group(head, q_th, nq, n_visible, shape.scale, scratch, out_th, lse);
    if (cache.nc() && head.moments && head.moments->count() > 0)
      for (int j = 0; j < nq; ++j)
        nc_blend(*head.moments, q_th + j * shape.head_dim_k, shape.scale, lse[j], out_th + j * shape.head_dim_v);
  }
}

}  // namespace mkv
