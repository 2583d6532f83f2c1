#include "kv/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kv/nc.h"
#include "ops/vec.h"

namespace mkv {
namespace {

// Scratch of one worker thread, sized on first use and reused (no allocation per token).
struct AttentionScratch {
  std::vector<float> logits;  // (n_visible) softmax logits, then weights
  std::vector<float> row;     // (max(head_dim_k, head_dim_v)) one decoded f16 row
};

// Softmax attention of q over the first n_visible rows of `head`; writes f_R to out (d_v) and
// returns log Z_R (the log-sum-exp of the scaled logits).
float attend_head(const KvHeadView& head, const float* q, int32_t n_visible, float scale,
                  AttentionScratch& scratch, float* out) {
  const int dk = head.head_dim_k, dv = head.head_dim_v;
  scratch.logits.resize(std::max<std::size_t>(scratch.logits.size(), n_visible));
  scratch.row.resize(std::max(dk, dv));
  float* logits = scratch.logits.data();
  const bool f32 = head.storage == KvStorage::F32;

  float max_logit = -INFINITY;
  for (int32_t i = 0; i < n_visible; ++i) {
    const float* k = static_cast<const float*>(head.keys) + static_cast<std::size_t>(i) * dk;
    if (!f32) {
      head.key(i, scratch.row.data());
      k = scratch.row.data();
    }
    logits[i] = scale * vec_dot(q, k, dk);
    max_logit = std::max(max_logit, logits[i]);
  }
  double sum = 0.0;
  for (int32_t i = 0; i < n_visible; ++i) {
    logits[i] = std::exp(logits[i] - max_logit);
    sum += logits[i];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  std::fill(out, out + dv, 0.0f);
  for (int32_t i = 0; i < n_visible; ++i) {
    const float* v = static_cast<const float*>(head.values) + static_cast<std::size_t>(i) * dv;
    if (!f32) {
      head.value(i, scratch.row.data());
      v = scratch.row.data();
    }
    vec_axpy(logits[i] * inv_sum, v, out, dv);
  }
  return max_logit + static_cast<float>(std::log(sum));
}

}  // namespace

void attend_layer(const KvCache& cache, int layer, const AttentionShape& shape, const float* q,
                  int n_tokens, float* out) {
  const KvCacheShape& cs = cache.shape();
  MKV_ASSERT(shape.n_heads % cs.n_kv_heads == 0 && shape.head_dim_k == cs.head_dim_k &&
             shape.head_dim_v == cs.head_dim_v);
  const int group = shape.n_heads / cs.n_kv_heads;
  const int64_t n_items = static_cast<int64_t>(n_tokens) * shape.n_heads;
  for (int g = 0; g < cs.n_kv_heads; ++g) MKV_ASSERT(cache.length(layer, g) >= n_tokens);

  // No exception may leave the parallel region: everything that can throw is checked above.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t item = 0; item < n_items; ++item) {
      thread_local AttentionScratch scratch;
      const int t = static_cast<int>(item / shape.n_heads);
      const int h = static_cast<int>(item % shape.n_heads);
      const KvHeadView head = cache.head(layer, h / group);
      const int32_t n_visible = head.length - n_tokens + t + 1;
      const float* q_th = q + item * shape.head_dim_k;
      float* out_th = out + item * shape.head_dim_v;
      const float lse = attend_head(head, q_th, n_visible, shape.scale, scratch, out_th);
      if (cache.nc() && head.moments && head.moments->count() > 0)
        nc_blend(*head.moments, q_th, shape.scale, lse, out_th);
  }
}

}  // namespace mkv
