#include "kv/presses/h2o.h"

#include <algorithm>

#include "core/error.h"
#include "kv/presses/attention_scores.h"

namespace mkv {

void H2OScorer::reset(const PressGeometry& geometry) {
  Scorer::reset(geometry);
  column_sums_.assign(std::size_t(geometry.n_layers) * geometry.n_kv_heads, {});
}

void H2OScorer::observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                        const KvCache& cache) {
  const PressGeometry& g = geometry_;
  const int group = g.group_size();
#pragma omp parallel for schedule(dynamic)
  for (int kv = 0; kv < g.n_kv_heads; ++kv) {
    const KvHeadView view = cache.head(layer, kv);
    const HeadRows keys = HeadRows::keys(view);  // (length, d_k)
    std::vector<double>& sums = column_sums_[std::size_t(layer) * g.n_kv_heads + kv];
    MKV_ASSERT(sums.size() <= std::size_t(view.length));
    sums.resize(view.length, 0.0);  // this batch's rows start at zero
    std::vector<float> attention(view.length), logits;  // (length) this batch's group mean
    std::vector<int32_t> visible(group);                // (group) rows the token's query heads see
    for (int t = 0; t < n_tokens; ++t) {
      std::fill(visible.begin(), visible.end(), visible_rows(view.positions, view.length, positions[t]));
      add_attention(q + (std::size_t(t) * g.n_heads + kv * group) * g.head_dim_k, group, g.head_dim_k,
                    visible.data(), keys.data(), g.head_dim_k, g.scale, 1.0f / float(group), attention.data(), logits);
    }
    for (int32_t j = 0; j < view.length; ++j) sums[j] += attention[j];
  }
}

void H2OScorer::score(const KvCache& cache, int layer, HeadScores& scores) {
  scores.resize(geometry_.n_kv_heads);
  for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
    const std::vector<double>& sums = column_sums_[std::size_t(layer) * geometry_.n_kv_heads + kv];
    scores[kv].assign(cache.length(layer, kv), 0.0f);  // rows never observed score 0
    for (std::size_t j = 0; j < sums.size() && j < scores[kv].size(); ++j) scores[kv][j] = float(sums[j]);
  }
}

void H2OScorer::on_retain(int layer, int kv_head, std::span<const int32_t> keep) {
  std::vector<double>& sums = column_sums_[std::size_t(layer) * geometry_.n_kv_heads + kv_head];
  std::vector<double> kept(keep.size(), 0.0);
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (std::size_t(keep[i]) < sums.size()) kept[i] = sums[keep[i]];
  sums = std::move(kept);
}

}  // namespace mkv
