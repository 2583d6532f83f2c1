// H2O: "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models"
// (Zhang et al., NeurIPS 2023, arXiv 2306.14048). docs/METHODS.md §6.3.
//
// Score of row j: Σ over all observed queries t of the causal softmax attention A_{t,j}, mean
// over the KV group's query heads (accumulated in observe(), from q and the cache's keys).
// Keeps the top L − window plus the window (and the sinks). With decode_slack the sums keep
// accumulating during decoding and eviction repeats when a head exceeds L + slack.
//
// Spec: h2o:window=auto,sinks=4,nc=0 (+ budget, decode_slack, groups, clip, means_only).
// Cost: observe is O(n_tokens · length · d) per head (quadratic in the prompt).
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kv/press_config.h"
#include "kv/presses/attention_scores.h"
#include "kv/presses/press_params.h"
#include "kv/presses/scorer_press.h"

namespace mkv {
namespace {

class H2OScorer : public Scorer {
 public:
  void reset(const PressGeometry& geometry) override;
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void score(const KvCache& cache, int layer, HeadScores& scores) override;
  void on_retain(int layer, int kv_head, std::span<const int32_t> keep) override;

 private:
  // (n_layers · n_kv_heads) vectors aligned with the head's rows: accumulated attention.
  std::vector<std::vector<double>> column_sums_;
};

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

const PressRegistration kRegistration{PressDef{
    .name = "h2o",
    .python_class = "H2O",
    .summary = "H2O: accumulated attention column sums",
    .order = 20,
    .params = {press_params::window(), press_params::sinks()},
    .scorer = [](const PressConfig&) -> std::unique_ptr<Scorer> { return std::make_unique<H2OScorer>(); },
    .queries = [](const PressConfig&) { return QueryUse::All; },
    .adaptive_scorer = true,
}};
}  // namespace
}  // namespace mkv
