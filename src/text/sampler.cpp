#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace mkv {
namespace {

int32_t argmax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;  // strict: the lowest id wins ties
  return static_cast<int32_t>(best);
}

}  // namespace

Sampler::Sampler(SamplerParams params) : params_(params), rng_(params.seed) {
  MKV_CHECK(std::isfinite(params.temperature), "sampler: temperature must be finite, got {}",
            params.temperature);
  MKV_CHECK(params.top_k >= 0, "sampler: top_k must be >= 0 (0 = off), got {}", params.top_k);
  MKV_CHECK(params.top_p > 0.0f && params.top_p <= 1.0f, "sampler: top_p must be in (0, 1], got {}",
            params.top_p);
  MKV_CHECK(params.min_p >= 0.0f && params.min_p <= 1.0f, "sampler: min_p must be in [0, 1], got {}",
            params.min_p);
  for (const auto& [id, bias] : params.logit_bias)
    MKV_CHECK(id >= 0 && !std::isnan(bias) && bias != std::numeric_limits<float>::infinity(),
              "sampler: logit bias {} of token {} must be a number or -infinity (a ban), on an id >= 0", bias, id);
}

int32_t Sampler::sample(std::span<const float> logits) {
  MKV_CHECK(!logits.empty(), "sampler: no logits to sample from");
  if (!params_.logit_bias.empty()) {
    biased_.assign(logits.begin(), logits.end());
    for (const auto& [id, bias] : params_.logit_bias) {
      MKV_CHECK(std::size_t(id) < biased_.size(), "sampler: logit bias on token {}, outside the vocabulary (0..{})", id,
                biased_.size() - 1);
      biased_[id] += bias;
    }
    logits = biased_;
    MKV_CHECK(logits[argmax(logits)] > -std::numeric_limits<float>::infinity(), "sampler: logit_bias bans every token");
  }
  if (params_.temperature <= 0.0f) return argmax(logits);
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
  size_t n = keep_top_k(logits.size());
  while (n > 1 && candidates_[n - 1].logit == -std::numeric_limits<float>::infinity()) --n;  // banned: never drawn
  n = keep_top_p(n);
  n = keep_min_p(n);
  return draw(n);
}

size_t Sampler::keep_top_k(size_t n) {
  // Sorting the kept prefix (most likely first, lowest id on ties) also serves top-p and min-p.
  const size_t k = params_.top_k > 0 ? std::min<size_t>(params_.top_k, n) : n;
  std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.begin() + n,
                    [](const Candidate& a, const Candidate& b) {
                      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
                    });
  return k;
}

size_t Sampler::keep_top_p(size_t n) const {
  if (params_.top_p >= 1.0f) return n;
  const float max_logit = candidates_[0].logit;
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += std::exp(double(candidates_[i].logit) - max_logit);
  double cumulative = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cumulative += std::exp(double(candidates_[i].logit) - max_logit) / total;
    if (cumulative >= params_.top_p) return i + 1;
  }
  return n;
}

size_t Sampler::keep_min_p(size_t n) const {
  if (params_.min_p <= 0.0f) return n;
  // p_i >= min_p * p_max  <=>  logit_i >= max_logit + log(min_p)
  const double threshold = double(candidates_[0].logit) + std::log(double(params_.min_p));
  size_t kept = 1;
  while (kept < n && candidates_[kept].logit >= threshold) ++kept;
  return kept;
}

int32_t Sampler::draw(size_t n) {
  const double max_logit = candidates_[0].logit;
  const double inv_temperature = 1.0 / params_.temperature;
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += std::exp((candidates_[i].logit - max_logit) * inv_temperature);
  // Uniform in [0, total) from the top 53 bits: the same on every platform (unlike
  // std::uniform_real_distribution).
  const double target = double(rng_() >> 11) * 0x1.0p-53 * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cumulative += std::exp((candidates_[i].logit - max_logit) * inv_temperature);
    if (target < cumulative) return candidates_[i].id;
  }
  return candidates_[n - 1].id;
}

}  // namespace mkv
