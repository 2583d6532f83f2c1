// ScorerPress: the composable core of every scoring method (kvpress's ScorerPress + wrappers).
// A Scorer only produces scores[kv_head][token] for a layer; ScorerPress turns them into kept
// tokens through selection.h, with
//   - a BudgetAllocation (allocation.h): uniform (L per head), pyramid (PyramidKV layer budgets),
//     adaptive (Ada-KV per-head budgets inside a layer, safeguard a);
//   - rounds: T rounds each evicting an equal share of what remains to evict, scores recomputed
//     between rounds (so moment-aware scorers see the moments grow; docs/METHODS.md §4);
//   - decode_slack S ≥ 0: after a decode step, compress a layer again once it exceeds L + S;
//   - nc and the moment configuration (any selection × NC on/off).
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

struct ScorerPressOptions {
  Budget budget;
  Protection protection;                   // sinks and window always kept
  Allocation allocation = Allocation::Uniform;
  double beta = 20.0;                      // pyramid: min layer budget = B/β
  double safeguard = 0.2;                  // adaptive: a
  int rounds = 1;                          // T
  int decode_slack = -1;                   // S; < 0: no decode-time eviction
  bool nc = false;                         // normalisation-corrected attention
  MomentConfig moments;                    // groups / comoment / clip; .track is derived
};

class ScorerPress : public Press {
 public:
  ScorerPress(std::unique_ptr<Scorer> scorer, const ScorerPressOptions& options);

  void reset(const PressGeometry& geometry) override;
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void compress(KvCache& cache, CompressReason reason) override;
  MomentConfig moment_config() const override;
  bool nc() const override { return options_.nc; }

  Scorer& scorer() { return *scorer_; }
  const ScorerPressOptions& options() const { return options_; }

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
  std::unique_ptr<BudgetAllocation> allocation_;  // from options_.allocation
  PressGeometry geometry_;
  HeadScores scores_;  // (n_kv_heads, head length) scratch of the layer being compressed
};

}  // namespace mkv
