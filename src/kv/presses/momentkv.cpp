#include "kv/presses/momentkv.h"

#include <cmath>

#include "kv/nc.h"

namespace mkv {

namespace {

// residual_norms (length): ‖v_j − estimate_j‖ where estimate_j = f̂_E(k_j) when the head has
// evicted tokens, else the mean value of the head's rows.
void residual_norms(const KvHeadView& view, float scale, std::vector<float>& norms) {
  const int d_v = view.head_dim_v;
  const HeadRows keys = HeadRows::keys(view), values = HeadRows::values(view);  // (length, d)
  const bool summary = view.moments != nullptr && view.moments->count() > 0;
  std::vector<float> estimates;  // (length, d_v) f̂_E(k_j), or (1, d_v) the rows' mean
  if (summary) {
    estimates.resize(std::size_t(view.length) * d_v);
    moment_estimates(*view.moments, keys.data(), view.length, scale, estimates.data());
  } else {
    estimates.assign(d_v, 0.0f);
    for (int32_t j = 0; j < view.length; ++j)
      for (int b = 0; b < d_v; ++b) estimates[b] += values.row(j)[b];
    for (float& x : estimates) x /= float(std::max(view.length, 1));
  }
  norms.assign(view.length, 0.0f);
  for (int32_t j = 0; j < view.length; ++j) {
    const float* estimate = summary ? &estimates[std::size_t(j) * d_v] : estimates.data();
    double sq = 0.0;
    for (int b = 0; b < d_v; ++b) {
      const double r = values.row(j)[b] - estimate[b];
      sq += r * r;
    }
    norms[j] = float(std::sqrt(sq));
  }
}

}  // namespace

MomentScorer::MomentScorer(int window, int kernel) : alpha_(window, kernel) {}

void MomentScorer::reset(const PressGeometry& geometry) {
  Scorer::reset(geometry);
  alpha_.reset(geometry);
}

void MomentScorer::observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                           const KvCache& cache) {
  alpha_.observe(layer, n_tokens, q, positions, cache);
}

void MomentScorer::score(const KvCache& cache, int layer, HeadScores& scores) {
  alpha_.score(cache, layer, scores);  // α
#pragma omp parallel for schedule(dynamic)
  for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
    const KvHeadView view = cache.head(layer, kv);
    std::vector<float> norms;  // (length) ‖r_j‖
    residual_norms(view, geometry_.scale, norms);
    for (int32_t j = 0; j < view.length; ++j) scores[kv][j] *= norms[j];
  }
}

}  // namespace mkv
