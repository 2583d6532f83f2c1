// TOVA: "Transformers are Multi-State RNNs" (Oren et al., 2024, arXiv 2401.06104), Token Omission
// Via Attention, as the paper and kvpress's TOVAPress score it.
//
// Decode-time eviction: whenever a layer holds more than its budget, the rows the newest query
// attends to least go, one ranking per layer: the score of the row at position p is the newest
// query's softmax attention to p, averaged over all query heads of the layer,
//   score(p) = (1/H) Σ_h softmax(τ q_h Kᵀ)_p     (q_h: head h's newest query, over its KV head's rows),
// and every KV head ranks its rows by it, so the heads keep the same positions (the paper's
// layer-wise policy). decode_slack defaults to 0: after every decode step a layer over its budget
// is compressed again, evicting the rows the new token attends to least. With window=w > 1 the
// score averages the last w queries (and the w newest rows are protected); window=1, the default,
// protects the newest row as kvpress does (it pads its score with the maximum).
//
// This file is the whole press: the scorer and its registration. The catalogue composes it with
// the shared wrappers (sinks, budget, decode_slack, the moments and NC) and, through `alloc`, with
// every budget allocation.
//
// Spec: tova:window=1,sinks=4,alloc=uniform,safeguard=0.2,beta=20,budget=L,decode_slack=0 (+ nc, groups,
// clip, means_only).
#include <algorithm>
#include <memory>
#include <vector>

#include "kv/press_config.h"
#include "kv/presses/attention_scores.h"
#include "kv/presses/observation_window.h"
#include "kv/presses/press_params.h"
#include "kv/presses/scorer_press.h"
#include "kv/selection.h"

namespace mkv {
namespace {

class TovaScorer : public Scorer {
 public:
  // window: >= 1, or Protection::kAutoWindow (under adakv).
  explicit TovaScorer(int window) : window_(window), layer_window_(window_capacity(window)) {}

  void reset(const PressGeometry& geometry) override {
    Scorer::reset(geometry);
    observed_.reset(geometry.n_layers, window_capacity(window_), std::size_t(geometry.n_heads) * geometry.head_dim_k);
  }
  void set_layer_budget(int32_t budget) override { layer_window_ = resolve_window(window_, budget); }
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions, const KvCache&) override {
    observed_.observe(layer, n_tokens, q, positions);
  }

  void score(const KvCache& cache, int layer, HeadScores& scores) override {
    const PressGeometry& g = geometry_;
    const ObservationWindow::Queries window = observed_.last(layer, layer_window_);
    const int group = g.group_size();
    // Each KV head's attention sums over its own rows (its group's query heads), then one table by
    // position: heads may hold different positions (ragged under adakv).
    HeadScores sums(g.n_kv_heads);  // (n_kv_heads, head length)
    int32_t span = 0;               // 1 + the largest position held
#pragma omp parallel for schedule(dynamic)
    for (int kv = 0; kv < g.n_kv_heads; ++kv) {
      const KvHeadView view = cache.head(layer, kv);
      const HeadRows keys = HeadRows::keys(view);  // (length, d_k)
      sums[kv].assign(view.length, 0.0f);
      std::vector<int32_t> visible(window.count);  // (n_obs) rows each observed query sees
      for (int t = 0; t < window.count; ++t) visible[t] = visible_rows(view.positions, view.length, window.positions[t]);
      std::vector<float> logits;
      if (window.count > 0)
        for (int h = kv * group; h < (kv + 1) * group; ++h)
          add_attention(window.q + std::size_t(h) * g.head_dim_k, window.count, int64_t(g.n_heads) * g.head_dim_k,
                        visible.data(), keys.data(), g.head_dim_k, g.scale, 1.0f, sums[kv].data(), logits);
    }
    for (int kv = 0; kv < g.n_kv_heads; ++kv) {
      const KvHeadView view = cache.head(layer, kv);
      if (view.length > 0) span = std::max(span, view.positions[view.length - 1] + 1);
    }
    std::vector<double> by_position(span, 0.0);  // (span) Σ over query heads and queries of the attention to p
    for (int kv = 0; kv < g.n_kv_heads; ++kv) {
      const KvHeadView view = cache.head(layer, kv);
      for (int32_t j = 0; j < view.length; ++j) by_position[view.positions[j]] += sums[kv][j];
    }
    const double mean = 1.0 / (double(g.n_heads) * std::max(window.count, 1));
    scores.resize(g.n_kv_heads);
    for (int kv = 0; kv < g.n_kv_heads; ++kv) {
      const KvHeadView view = cache.head(layer, kv);
      scores[kv].resize(view.length);
      for (int32_t j = 0; j < view.length; ++j) scores[kv][j] = float(by_position[view.positions[j]] * mean);
    }
  }

 private:
  int window_, layer_window_;  // the window given, and the one of the layer being scored
  ObservationWindow observed_;
};

PressParam newest_query_window() {
  PressParam p = press_params::window();
  p.fallback = "1";
  p.help = "queries whose attention is averaged (and newest rows kept); 1 = the newest query, TOVA's";
  return p;
}

const PressRegistration kRegistration{PressDef{
    .name = "tova",
    .python_class = "TOVA",
    .summary = "TOVA: evict the rows the newest query attends to least, at every decode step",
    .order = 80,
    .params = {newest_query_window(), press_params::sinks(),
               press_params::alloc("uniform", "budget allocation (allocation.h)"), press_params::safeguard(),
               press_params::beta()},
    .scorer = [](const PressConfig& c) -> std::unique_ptr<Scorer> { return std::make_unique<TovaScorer>(c.window()); },
    .queries = [](const PressConfig&) { return QueryUse::Window; },
    .adaptive_scorer = true,
    .resolve = [](PressConfig& c) { c.default_to("decode_slack", "0"); },  // decode-time by definition
}};

}  // namespace
}  // namespace mkv
