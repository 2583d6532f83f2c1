#include "kv/presses/snapkv.h"

#include <algorithm>

#include "core/error.h"
#include "kv/press_config.h"
#include "kv/presses/attention_scores.h"
#include "kv/presses/press_params.h"

namespace mkv {

int pooling_kernel(int32_t budget) {
  const int third = int(std::clamp<int32_t>(budget / 3, 0, 64));
  return std::clamp(third | 1, 7, 31);
}

SnapKVScorer::SnapKVScorer(int window, int kernel)
    : window_(window),
      kernel_(kernel),
      layer_window_(window_capacity(window)),
      layer_kernel_(kernel == kAutoKernel ? 7 : kernel) {
  MKV_ASSERT((window >= 1 || window == Protection::kAutoWindow) &&
             (kernel == kAutoKernel || (kernel >= 1 && kernel % 2 == 1)));
}

void SnapKVScorer::set_layer_budget(int32_t budget) {
  layer_window_ = resolve_window(window_, budget);
  layer_kernel_ = kernel_ == kAutoKernel ? pooling_kernel(budget) : kernel_;
}

void SnapKVScorer::reset(const PressGeometry& geometry) {
  Scorer::reset(geometry);
  observed_.reset(geometry.n_layers, window_capacity(window_), std::size_t(geometry.n_heads) * geometry.head_dim_k);
}

void SnapKVScorer::observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                           const KvCache& cache) {
  observed_.observe(layer, n_tokens, q, positions);
}

void SnapKVScorer::score(const KvCache& cache, int layer, HeadScores& scores) {
  const PressGeometry& g = geometry_;
  const ObservationWindow::Queries window = observed_.last(layer, layer_window_);  // the last observed queries
  const int n_obs = window.count;
  const float* obs_q = window.q;
  const int32_t* obs_positions = window.positions;
  const int group = g.group_size(), half = layer_kernel_ / 2;
  scores.resize(g.n_kv_heads);
#pragma omp parallel for schedule(dynamic)
  for (int kv = 0; kv < g.n_kv_heads; ++kv) {
    const KvHeadView view = cache.head(layer, kv);
    const HeadRows keys = HeadRows::keys(view);  // (length, d_k)
    const int32_t length = view.length;
    // Rows before the observation window, [0, prefix), and the window's rows, [prefix, length),
    // are max-pooled separately, so that at budgets that protect the whole window the scores of
    // the rows before it are kvpress's.
    const int32_t prefix = n_obs > 0 ? visible_rows(view.positions, length, obs_positions[0] - 1) : length;
    std::vector<float>& out = scores[kv];
    out.assign(length, 0.0f);
    std::vector<float> sums(length), logits;  // (length) one query head's column sums
    std::vector<int32_t> visible(n_obs);        // (n_obs) rows each observed query sees
    for (int t = 0; t < n_obs; ++t) visible[t] = visible_rows(view.positions, length, obs_positions[t]);
    for (int h = kv * group; h < (kv + 1) * group; ++h) {
      std::fill(sums.begin(), sums.end(), 0.0f);
      if (n_obs > 0)
        add_attention(obs_q + std::size_t(h) * g.head_dim_k, n_obs, int64_t(g.n_heads) * g.head_dim_k,
                      visible.data(), keys.data(), g.head_dim_k, g.scale, 1.0f, sums.data(), logits);
      for (int32_t j = 0; j < length; ++j) {  // max-pool inside j's segment, then group mean
        const int32_t lo = j < prefix ? 0 : prefix, hi = j < prefix ? prefix : length;
        float pooled = sums[j];
        for (int32_t i = std::max(lo, j - half); i <= std::min(hi - 1, j + half); ++i)
          pooled = std::max(pooled, sums[i]);
        out[j] += pooled / float(group);
      }
    }
  }
}

int kernel_of(const PressConfig& c) { return c.is_auto("kernel") ? SnapKVScorer::kAutoKernel : int(c.integer("kernel")); }

std::unique_ptr<Scorer> make_snapkv_scorer(const PressConfig& c) {
  return std::make_unique<SnapKVScorer>(c.window(), kernel_of(c));
}

namespace {

const PressRegistration kRegistration{PressDef{
    .name = "snapkv",
    .python_class = "SnapKV",
    .summary = "SnapKV: observation-window attention, max-pooled",
    .order = 30,
    .params = {press_params::window(), press_params::kernel(), press_params::sinks()},
    .scorer = make_snapkv_scorer,
    .queries = [](const PressConfig&) { return QueryUse::Window; },
    .adaptive_scorer = true,
}};

}  // namespace
}  // namespace mkv
