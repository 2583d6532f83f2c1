#include "kv/presses/scorer_press.h"

#include <algorithm>

#include "core/error.h"

namespace mkv {

ScorerPress::ScorerPress(std::unique_ptr<Scorer> scorer, const ScorerPressOptions& options)
    : scorer_(std::move(scorer)),
      options_(options),
      allocation_(make_allocation(options.allocation, options.beta, options.safeguard)) {
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
  return allocation_->layer_budget(budget, options_.protection, seen, cache.shape().n_layers, layer);
}

bool ScorerPress::layer_over(const KvCache& cache, int layer, int32_t slack) const {
  std::vector<int32_t> lengths(cache.shape().n_kv_heads);  // (n_kv_heads)
  for (int h = 0; h < cache.shape().n_kv_heads; ++h) lengths[h] = cache.length(layer, h);
  return allocation_->over(lengths, layer_budget(cache, layer) + slack);
}

std::vector<int32_t> ScorerPress::final_keep(const KvCache& cache, int layer, const HeadScores& scores) const {
  const int32_t budget = layer_budget(cache, layer);
  return allocation_->head_keeps(scores, budget, clamp_protection(options_.protection, budget));
}

void ScorerPress::compress(KvCache& cache, CompressReason reason) {
  MKV_ASSERT(geometry_.n_layers == cache.shape().n_layers && geometry_.n_kv_heads == cache.shape().n_kv_heads);
  const bool decoding = reason == CompressReason::AfterDecodeStep;
  if (decoding && options_.decode_slack < 0) return;
  const int32_t slack = decoding ? options_.decode_slack : 0;
  for (int layer = 0; layer < geometry_.n_layers; ++layer)
    if (layer_over(cache, layer, slack)) compress_layer(cache, layer);
}

void ScorerPress::score_layer(const KvCache& cache, int layer, HeadScores& scores) {
  scorer_->set_layer_budget(layer_budget(cache, layer));
  scorer_->score(cache, layer, scores);
}

void ScorerPress::compress_layer(KvCache& cache, int layer) {
  const Protection protection = clamp_protection(options_.protection, layer_budget(cache, layer));
  for (int round = 0; round < options_.rounds; ++round) {
    score_layer(cache, layer, scores_);
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
