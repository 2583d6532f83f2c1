#include "kv/presses/scorer_press.h"

#include <algorithm>

#include "core/error.h"

namespace mkv {

ScorerPress::ScorerPress(std::unique_ptr<Scorer> scorer, const ScorerPressOptions& options)
    : scorer_(std::move(scorer)), options_(options) {
  MKV_ASSERT(scorer_ != nullptr);
  MKV_ASSERT(options.rounds >= 1 && options.moments.groups >= 1);
  MKV_ASSERT(options.budget.tokens > 0 || (options.budget.ratio >= 0.0 && options.budget.ratio < 1.0));
}

void ScorerPress::reset(const PressGeometry& geometry) {
  geometry.validate();
  geometry_ = geometry;
  scorer_->reset(geometry);
}

void ScorerPress::observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                          const KvCache& cache) {
  scorer_->observe(layer, n_tokens, q, positions, cache);
}

MomentConfig ScorerPress::moment_config() const {
  MomentConfig config = options_.moments;
  config.track = options_.nc || scorer_->needs_moments();
  return config;
}

int32_t ScorerPress::layer_budget(const KvCache& cache, int layer) const {
  int32_t seen = 0;  // tokens of the sequence so far (stable across eviction rounds)
  for (int h = 0; h < cache.shape().n_kv_heads; ++h) {
    const KvHeadView view = cache.head(layer, h);
    if (view.length > 0) seen = std::max(seen, view.positions[view.length - 1] + 1);
  }
  const int32_t budget = std::max<int32_t>(options_.budget.resolve(seen), 1);
  if (options_.allocation != Allocation::Pyramid) return budget;
  const int window = clamp_protection(options_.protection, budget).window;
  return pyramid_budgets(budget, window, seen, cache.shape().n_layers, options_.beta)[layer];
}

bool ScorerPress::layer_over(const KvCache& cache, int layer, int32_t slack) const {
  const int32_t limit = layer_budget(cache, layer) + slack;
  const int n_kv = cache.shape().n_kv_heads;
  int64_t total = 0;
  int32_t longest = 0;
  for (int h = 0; h < n_kv; ++h) {
    total += cache.length(layer, h);
    longest = std::max(longest, cache.length(layer, h));
  }
  // Adaptive heads are ragged by design: the layer as a whole is over budget or not.
  if (options_.allocation == Allocation::Adaptive) return total > int64_t(n_kv) * limit;
  return longest > limit;
}

std::vector<int32_t> ScorerPress::final_keep(const KvCache& cache, int layer, const HeadScores& scores) const {
  const int32_t budget = layer_budget(cache, layer);
  const int n_kv = cache.shape().n_kv_heads;
  std::vector<int32_t> keep(n_kv, budget);  // (n_kv_heads)
  if (options_.allocation != Allocation::Adaptive) return keep;
  const Protection protection = clamp_protection(options_.protection, budget);
  const int32_t candidate_budget = budget - protection.sinks - protection.window;
  const std::vector<int32_t> slots = adaptive_budgets(scores, protection, candidate_budget, options_.safeguard);
  for (int h = 0; h < n_kv; ++h) keep[h] = slots[h] + protected_count(int32_t(scores[h].size()), protection);
  return keep;
}

void ScorerPress::compress(KvCache& cache, CompressReason reason) {
  MKV_ASSERT(geometry_.n_layers == cache.shape().n_layers && geometry_.n_kv_heads == cache.shape().n_kv_heads);
  const bool decoding = reason == CompressReason::AfterDecodeStep;
  if (decoding && options_.decode_slack < 0) return;
  const int32_t slack = decoding ? options_.decode_slack : 0;
  for (int layer = 0; layer < geometry_.n_layers; ++layer)
    if (layer_over(cache, layer, slack)) compress_layer(cache, layer);
}

void ScorerPress::compress_layer(KvCache& cache, int layer) {
  const Protection protection = clamp_protection(options_.protection, layer_budget(cache, layer));
  for (int round = 0; round < options_.rounds; ++round) {
    scorer_->score(cache, layer, scores_);
    const std::vector<int32_t> finals = final_keep(cache, layer, scores_);
    std::vector<std::vector<int32_t>> keeps(geometry_.n_kv_heads);  // rows each evicting head keeps
    std::vector<uint8_t> evicts(geometry_.n_kv_heads, 0);             // whether head h evicts this round
    bool evicted = false;
    for (int h = 0; h < geometry_.n_kv_heads; ++h) {
      const int32_t length = cache.length(layer, h);
      MKV_ASSERT(int32_t(scores_[h].size()) == length);
      const int32_t n_keep = round_keep(length, finals[h], options_.rounds - round);
      if (n_keep >= length) continue;
      keeps[h] = select_keep(scores_[h], n_keep, protection);
      evicts[h] = 1;
      evicted = true;
    }
    // Heads evict independently (each touches only its own rows, moments and scorer state):
    // folding the evicted rows into the moments is most of a round's work. No exception may
    // leave the parallel region: the keep lists are built and checked above.
#pragma omp parallel for schedule(dynamic)
    for (int h = 0; h < geometry_.n_kv_heads; ++h) {
      if (!evicts[h]) continue;
      cache.retain(layer, h, keeps[h]);
      scorer_->on_retain(layer, h, keeps[h]);
    }
    if (!evicted) break;
  }
}

}  // namespace mkv
