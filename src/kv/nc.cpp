#include "kv/nc.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/matmul.h"
#include "ops/vec.h"

namespace mkv {

namespace {

float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// log Ẑ of one summary at q: log n + τ q·k̄ (Jensen lower bound of log Σ e^{τ q·k_i}).
float log_mass(const MomentStats& s, const float* q, float scale) {
  return std::log(float(s.count())) + scale * vec_dot(q, s.key_mean_f32().data(), s.head_dim_k());
}

// The factor that shrinks a first-order term τ C q of squared norm norm_sq to norm ≤ the RMS
// value spread of s when `clip` (else 1).
float clip_factor(const MomentStats& s, float norm_sq, bool clip) {
  const float spread = float(s.value_rms_spread());
  return clip && norm_sq > spread * spread ? spread / std::sqrt(norm_sq) : 1.0f;
}

// out (d_v) = v̄ + τ C q, with τ C q shrunk to norm ≤ RMS value spread when `clip`.
void estimate(const MomentStats& s, const float* q, float scale, bool clip, float* out) {
  const int d_k = s.head_dim_k(), d_v = s.head_dim_v();
  const float* v_mean = s.value_mean_f32().data();
  if (!s.has_comoment()) {
    std::copy(v_mean, v_mean + d_v, out);
    return;
  }
  const float* cov = s.covariance_f32().data();  // (d_v, d_k)
  float norm_sq = 0.0f;
  for (int b = 0; b < d_v; ++b) {
    out[b] = scale * vec_dot(cov + std::size_t(b) * d_k, q, d_k);
    norm_sq += out[b] * out[b];
  }
  const float shrink = clip_factor(s, norm_sq, clip);
  for (int b = 0; b < d_v; ++b) out[b] = v_mean[b] + shrink * out[b];
}

// Softmax weights over the non-empty groups' virtual slots plus, when `lse_retained` is given,
// the retained set. weights (G) gets each group's share; returns the retained share (0 if none).
float slot_weights(const MomentGroups& m, const float* q, float scale, const float* lse_retained,
                   std::vector<float>& weights) {
  const auto& groups = m.groups();
  weights.assign(groups.size(), 0.0f);
  float top = lse_retained ? *lse_retained : -INFINITY;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].count() == 0) continue;
    weights[g] = log_mass(groups[g], q, scale);
    top = std::max(top, weights[g]);
  }
  float total = lse_retained ? std::exp(*lse_retained - top) : 0.0f;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].count() == 0) continue;
    weights[g] = std::exp(weights[g] - top);
    total += weights[g];
  }
  for (float& w : weights) w /= total;
  return lse_retained ? std::exp(*lse_retained - top) / total : 0.0f;
}

// out = w_R·out + Σ_g w_g f̂_g, with scratch (d_v) for one group's estimate.
void blend_groups(const MomentGroups& m, const float* q, float scale, const float* lse_retained,
                  float* out) {
  thread_local std::vector<float> weights, group_out;  // (G), (d_v): grown once per thread
  const int d_v = m.groups()[0].head_dim_v();
  group_out.resize(d_v);
  const float w_retained = slot_weights(m, q, scale, lse_retained, weights);
  for (int b = 0; b < d_v; ++b) out[b] *= w_retained;
  for (std::size_t g = 0; g < m.groups().size(); ++g) {
    if (m.groups()[g].count() == 0) continue;
    estimate(m.groups()[g], q, scale, m.config().clip, group_out.data());
    for (int b = 0; b < d_v; ++b) out[b] += weights[g] * group_out[b];
  }
}

}  // namespace

void nc_blend(const MomentStats& moments, const float* q, float scale, float lse_retained,
              float* out) {
  if (moments.count() == 0) return;
  const int d_k = moments.head_dim_k(), d_v = moments.head_dim_v();
  const float w_retained = sigmoid(lse_retained - log_mass(moments, q, scale));
  const float w_evicted = 1.0f - w_retained;
  const float* v_mean = moments.value_mean_f32().data();
  const float* cov = moments.covariance_f32().data();  // (d_v, d_k) C = S̃/n_e
  for (int b = 0; b < d_v; ++b) {
    const float f_e = v_mean[b] + (moments.has_comoment() ? scale * vec_dot(cov + std::size_t(b) * d_k, q, d_k) : 0.0f);
    out[b] = w_retained * out[b] + w_evicted * f_e;
  }
}

void nc_blend(const MomentGroups& moments, const float* q, float scale, float lse_retained,
              float* out) {
  if (moments.count() == 0) return;
  blend_groups(moments, q, scale, &lse_retained, out);
}

void moment_estimate(const MomentStats& moments, const float* q, float scale, float* out) {
  estimate(moments, q, scale, /*clip=*/false, out);
}

void moment_estimate(const MomentGroups& moments, const float* q, float scale, float* out) {
  std::fill(out, out + moments.groups()[0].head_dim_v(), 0.0f);
  blend_groups(moments, q, scale, nullptr, out);
}

void moment_estimates(const MomentGroups& moments, const float* q, int64_t n, float scale, float* out) {
  const int d_k = moments.groups()[0].head_dim_k(), d_v = moments.groups()[0].head_dim_v();
  std::vector<const MomentStats*> live;  // the non-empty groups, G' of them
  for (const MomentStats& g : moments.groups())
    if (g.count() > 0) live.push_back(&g);
  const int n_live = int(live.size());
  std::vector<float> key_means(std::size_t(n_live) * d_k);    // (G', d_k)
  std::vector<float> value_means(std::size_t(d_v) * n_live);  // (d_v, G'): transposed
  std::vector<float> log_counts(n_live);                      // (G') log n_g
  for (int g = 0; g < n_live; ++g) {
    log_counts[g] = std::log(float(live[g]->count()));
    std::copy_n(live[g]->key_mean_f32().data(), d_k, &key_means[std::size_t(g) * d_k]);
    for (int b = 0; b < d_v; ++b) value_means[std::size_t(b) * n_live + g] = live[g]->value_mean_f32()[b];
  }
  // weights (n, G'): softmax over the groups of log n_g + τ q·k̄_g, as in slot_weights.
  std::vector<float> weights(std::size_t(n) * n_live);
  matmul(WeightMatrix{GgmlType::F32, key_means.data(), n_live, d_k}, q, n, weights.data());
  for (int64_t i = 0; i < n; ++i) {
    float* w = &weights[std::size_t(i) * n_live];
    for (int g = 0; g < n_live; ++g) w[g] = log_counts[g] + scale * w[g];
    softmax(w, n_live);
  }
  // out = Σ_g w_g v̄_g, plus Σ_g w_g · clip(τ C_g q) for summaries with a co-moment.
  matmul(WeightMatrix{GgmlType::F32, value_means.data(), d_v, n_live}, weights.data(), n, out);
  if (!moments.config().comoment) return;
  std::vector<float> first_order(std::size_t(n) * d_v);  // (n, d_v) C_g q
  for (int g = 0; g < n_live; ++g) {
    matmul(WeightMatrix{GgmlType::F32, live[g]->covariance_f32().data(), d_v, d_k}, q, n, first_order.data());
    for (int64_t i = 0; i < n; ++i) {
      float* term = &first_order[std::size_t(i) * d_v];
      float norm_sq = 0.0f;
      for (int b = 0; b < d_v; ++b) {
        term[b] *= scale;
        norm_sq += term[b] * term[b];
      }
      const float shrink = clip_factor(*live[g], norm_sq, moments.config().clip);
      vec_axpy(weights[std::size_t(i) * n_live + g] * shrink, term, out + std::size_t(i) * d_v, d_v);
    }
  }
}

}  // namespace mkv
