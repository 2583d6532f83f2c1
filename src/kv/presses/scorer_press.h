// ScorerPress: the composable core of every scoring method (kvpress's ScorerPress + wrappers).
// A Scorer only produces scores[kv_head][token] for a layer; ScorerPress turns them into kept
// tokens through selection.h, with
//   - a BudgetAllocation (allocation.h), given to it: uniform (L per head), pyramid (PyramidKV
//     layer budgets), adaptive (Ada-KV per-head budgets inside a layer, safeguard a), global;
//   - rounds: T rounds each evicting an equal share of what remains to evict, scores recomputed
//     between rounds (so moment-aware scorers see the moments grow; docs/METHODS.md §4);
//   - decode_slack S ≥ 0: after a decode step, compress a layer again once it exceeds L + S;
//   - the moment configuration of the cache (tracked when the scorer reads moments).
// NC is a wrapper around any press (NcPress, nc_press.h). make_scorer_press composes all of them
// from a PressConfig, so that a new scorer gets every wrapper without code of its own.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kv/press.h"
#include "kv/presses/allocation.h"

namespace mkv {

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual void reset(const PressGeometry& geometry) { geometry_ = geometry; }
  virtual void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                       const KvCache& cache) {}
  // Tokens per KV head the layer about to be scored may keep (window included); called before
  // every score(). Scorers whose parameters follow the budget read it here.
  virtual void set_layer_budget(int32_t budget) {}
  virtual void score(const KvCache& cache, int layer, HeadScores& scores) = 0;
  // Called after cache.retain(layer, kv_head, keep) so per-row state can be compacted. Runs
  // concurrently for different heads of a layer: it may touch only that head's state.
  virtual void on_retain(int layer, int kv_head, std::span<const int32_t> keep) {}
  // True when the scores read the cache's moments (they must then be tracked even without NC).
  virtual bool needs_moments() const { return false; }

 protected:
  PressGeometry geometry_;
};

// The budget (validated where it was given: PressConfig) and the wrappers' settings.
struct ScorerPressOptions {
  Budget budget;
  Protection protection;                   // sinks and window always kept
  int rounds = 1;                          // T >= 1
  int decode_slack = -1;                   // S; < 0: no decode-time eviction
  MomentConfig moments;                    // groups / comoment / clip; .track is derived
};

class ScorerPress : public Press {
 public:
  ScorerPress(std::unique_ptr<Scorer> scorer, std::unique_ptr<BudgetAllocation> allocation,
              const ScorerPressOptions& options);

  void reset(const PressGeometry& geometry) override;
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void compress(KvCache& cache, CompressReason reason) override;
  // The moments the cache keeps (tracked when the scorer reads them; NcPress tracks them always).
  MomentConfig moment_config() const override;

  Scorer& scorer() { return *scorer_; }
  const ScorerPressOptions& options() const { return options_; }
  const BudgetAllocation& allocation() const { return *allocation_; }

  // The scores a compression round of `layer` ranks, as the cache stands (the scorer told the
  // layer's budget first).
  void score_layer(const KvCache& cache, int layer, HeadScores& scores);

  // Final rows each head may keep (window included) given every layer's current scores, both
  // (n_layers · n_kv_heads) with head h of layer l at l·n_kv_heads + h.
  std::vector<int32_t> final_keeps(const KvCache& cache, HeadScoresView model_scores) const;

 private:
  int32_t layer_budget(const KvCache& cache, int layer) const;  // L, or PyramidKV's L_l
  bool layer_over(const KvCache& cache, int layer, int32_t slack) const;
  std::vector<int32_t> layer_final_keeps(const KvCache& cache, int layer, HeadScoresView scores) const;
  void compress_layer(KvCache& cache, int layer);
  // Allocation across layers: every head of every layer in one ranking.
  bool model_over(const KvCache& cache, int32_t slack) const;
  void compress_model(KvCache& cache);
  // Evicts one round of each head (scores (n_heads, length) of the layer, finals its final keeps);
  // returns whether any head evicted.
  bool evict_round(KvCache& cache, int layer, HeadScoresView scores, std::span<const int32_t> finals,
                   const Protection& protection, int rounds_left);

  std::unique_ptr<Scorer> scorer_;
  ScorerPressOptions options_;
  std::unique_ptr<BudgetAllocation> allocation_;
  PressGeometry geometry_;
  HeadScores scores_;  // (n_kv_heads, head length) scratch of the layer being compressed
};

class PressConfig;

// The scorer press of a validated config: its scorer (PressDef::scorer) in a ScorerPress with the
// config's protection, budget, rounds, decode slack, moments and allocation, inside NcPress when
// nc=1. The config must be a scorer press's, with a budget.
std::unique_ptr<Press> make_scorer_press(const PressConfig& config);

// The wrappers' settings of a scorer press's config (its budget: `budget`).
ScorerPressOptions scorer_press_options(const PressConfig& config, const Budget& budget);

}  // namespace mkv
