#include "kv/presses/scorer_press.h"

#include <algorithm>

#include "core/error.h"
#include "kv/press_config.h"
#include "kv/presses/nc_press.h"

namespace mkv {

ScorerPress::ScorerPress(std::unique_ptr<Scorer> scorer, std::unique_ptr<BudgetAllocation> allocation,
                         const ScorerPressOptions& options)
    : scorer_(std::move(scorer)), options_(options), allocation_(std::move(allocation)) {
  MKV_ASSERT(scorer_ != nullptr && allocation_ != nullptr);
}

ScorerPressOptions scorer_press_options(const PressConfig& c, const Budget& budget) {
  ScorerPressOptions o;
  o.budget = budget;
  o.protection.sinks = int(c.integer("sinks"));
  o.protection.window = c.window();
  o.rounds = c.has("rounds") ? int(c.integer("rounds")) : 1;
  o.decode_slack = int(c.integer("decode_slack"));
  o.moments.groups = int(c.integer("groups"));
  o.moments.clip = c.flag("clip");
  o.moments.comoment = !c.flag("means_only");
  return o;
}

std::unique_ptr<Press> make_scorer_press(const PressConfig& c) {
  MKV_ASSERT(c.def().is_scorer() && c.budget());
  // Pyramid and adaptive allocations read beta and safeguard when the press takes them.
  const double beta = c.has("beta") ? c.real("beta") : 20.0;
  const double safeguard = c.has("safeguard") ? c.real("safeguard") : 0.2;
  std::unique_ptr<Press> press = std::make_unique<ScorerPress>(
      c.def().scorer(c), make_allocation(c.allocation(), beta, safeguard), scorer_press_options(c, *c.budget()));
  if (c.flag("nc")) press = std::make_unique<NcPress>(std::move(press));
  return press;
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
  config.track = scorer_->needs_moments();
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

std::vector<int32_t> ScorerPress::layer_final_keeps(const KvCache& cache, int layer, HeadScoresView scores) const {
  const int32_t budget = layer_budget(cache, layer);
  return allocation_->head_keeps(scores, budget, clamp_protection(options_.protection, budget));
}

std::vector<int32_t> ScorerPress::final_keeps(const KvCache& cache, HeadScoresView model_scores) const {
  const int n_heads = geometry_.n_kv_heads;
  MKV_ASSERT(model_scores.size() == std::size_t(geometry_.n_layers) * n_heads);
  if (allocation_->across_layers()) return layer_final_keeps(cache, 0, model_scores);  // layer budgets are equal
  std::vector<int32_t> finals;
  for (int layer = 0; layer < geometry_.n_layers; ++layer) {
    const std::vector<int32_t> layer_finals = layer_final_keeps(cache, layer, model_scores.subspan(std::size_t(layer) * n_heads, n_heads));
    finals.insert(finals.end(), layer_finals.begin(), layer_finals.end());
  }
  return finals;
}

void ScorerPress::compress(KvCache& cache, CompressReason reason) {
  MKV_ASSERT(geometry_.n_layers == cache.shape().n_layers && geometry_.n_kv_heads == cache.shape().n_kv_heads);
  const bool decoding = reason == CompressReason::AfterDecodeStep;
  if (decoding && options_.decode_slack < 0) return;
  const int32_t slack = decoding ? options_.decode_slack : 0;
  if (allocation_->across_layers()) {
    if (model_over(cache, slack)) compress_model(cache);
    return;
  }
  for (int layer = 0; layer < geometry_.n_layers; ++layer)
    if (layer_over(cache, layer, slack)) compress_layer(cache, layer);
}

bool ScorerPress::model_over(const KvCache& cache, int32_t slack) const {
  int64_t total = 0;
  for (int layer = 0; layer < geometry_.n_layers; ++layer)
    for (int h = 0; h < geometry_.n_kv_heads; ++h) total += cache.length(layer, h);
  return total > int64_t(geometry_.n_layers) * geometry_.n_kv_heads * (layer_budget(cache, 0) + slack);
}

void ScorerPress::compress_model(KvCache& cache) {
  const int n_layers = geometry_.n_layers, n_heads = geometry_.n_kv_heads;
  const Protection protection = clamp_protection(options_.protection, layer_budget(cache, 0));
  HeadScores all(std::size_t(n_layers) * n_heads);  // (n_layers · n_kv_heads, head length)
  for (int round = 0; round < options_.rounds; ++round) {
    for (int layer = 0; layer < n_layers; ++layer) {
      score_layer(cache, layer, scores_);
      for (int h = 0; h < n_heads; ++h) all[std::size_t(layer) * n_heads + h] = std::move(scores_[h]);
    }
    const std::vector<int32_t> finals = final_keeps(cache, all);
    bool evicted = false;
    for (int layer = 0; layer < n_layers; ++layer) {
      const std::size_t first = std::size_t(layer) * n_heads;
      evicted |= evict_round(cache, layer, HeadScoresView(all).subspan(first, n_heads),
                             std::span(finals).subspan(first, n_heads), protection, options_.rounds - round);
    }
    if (!evicted) break;
  }
}

void ScorerPress::score_layer(const KvCache& cache, int layer, HeadScores& scores) {
  scorer_->set_layer_budget(layer_budget(cache, layer));
  scorer_->score(cache, layer, scores);
}

void ScorerPress::compress_layer(KvCache& cache, int layer) {
  const Protection protection = clamp_protection(options_.protection, layer_budget(cache, layer));
  for (int round = 0; round < options_.rounds; ++round) {
    score_layer(cache, layer, scores_);
    if (!evict_round(cache, layer, scores_, layer_final_keeps(cache, layer, scores_), protection,
                     options_.rounds - round))
      break;
  }
}

bool ScorerPress::evict_round(KvCache& cache, int layer, HeadScoresView scores, std::span<const int32_t> finals,
                              const Protection& protection, int rounds_left) {
  const int n_heads = geometry_.n_kv_heads;
  std::vector<std::vector<int32_t>> keeps(n_heads);  // rows each evicting head keeps
  std::vector<uint8_t> evicts(n_heads, 0);           // whether head h evicts this round
  bool evicted = false;
  for (int h = 0; h < n_heads; ++h) {
    const int32_t length = cache.length(layer, h);
    MKV_ASSERT(int32_t(scores[h].size()) == length);
    const int32_t n_keep = round_keep(length, finals[h], rounds_left);
    if (n_keep >= length) continue;
    keeps[h] = select_keep(scores[h], n_keep, protection);
    evicts[h] = 1;
    evicted = true;
  }
  // Heads evict independently (each touches only its own rows, moments and scorer state):
  // folding the evicted rows into the moments is most of a round's work. No exception may
  // leave the parallel region: the keep lists are built and checked above.
#pragma omp parallel for schedule(dynamic)
  for (int h = 0; h < n_heads; ++h) {
    if (!evicts[h]) continue;
    cache.retain(layer, h, keeps[h]);
    scorer_->on_retain(layer, h, keeps[h]);
  }
  return evicted;
}

}  // namespace mkv
