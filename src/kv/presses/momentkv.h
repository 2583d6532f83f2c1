// MomentKV: "MomentKV" (Li, Li, Lan, 2026, arXiv 2606.01563). docs/METHODS.md §3–4, §7.
//
// Moment-informed eviction (MI): the residual of retained row j against the current summary of
// the evicted tokens, its own key standing in for the query,
//   r_j = v_j − f̂_E(k_j) = v_j − v̄ − τ C k_j    (n_e = 0: r_j = v_j − the head's mean value),
// scored α_j·‖r_j‖ with α_j the SnapKV observation-window score (group mean). Evicts in `rounds`
// rounds, each recomputing residuals against the moments grown by the previous rounds.
// NC (normalisation-corrected attention) on by default.
//
// Spec and defaults:
//   momentkv:window=auto,kernel=auto,sinks=4,rounds=1,alloc=global,nc=1,variant=means
//   alloc      global (Ada-KV's rule on α·‖r‖ over every head of every layer, safeguard=0.2; the
//              default, chosen on the dev split) | adaptive (the same inside each layer) | uniform |
//              pyramid | pyramid_adaptive (allocation.h)
//   nc=0       MI selection without NC (moments still tracked: the scores need them)
//   variant    means:   groups=2, means_only=1 unless given (the default, chosen on the dev split:
//                       docs/results/defaults_dev.md; 2·(d_k + d_v + 1) numbers/head)
//              paper:   one summary per head, unclipped (d_k·d_v + d_k + d_v + 1 numbers/head)
//              grouped: groups=16, clip=1 unless given (docs/METHODS.md §7.1's best; G·(d_k·d_v +
//                       d_k + d_v + 2) numbers/head, ≈ 16·(d+2)/2 tokens at d_k = d_v = d)
//   groups=G   G moment groups per head, each its own virtual slot (needs a MomentGroups cache)
//   clip=1     trust region: ‖τ C q‖ ≤ RMS spread of the group's values (+1 number per group)
//   means_only=1  groups store means only (d_k + d_v + 1 numbers per group)
#pragma once

#include "kv/presses/snapkv.h"

namespace mkv {

// α·‖r‖: SnapKV's observation-window scores (α) times the residual norms against the moments.
class MomentScorer : public Scorer {
 public:
  MomentScorer(int window, int kernel);
  void reset(const PressGeometry& geometry) override;
  void set_layer_budget(int32_t budget) override { alpha_.set_layer_budget(budget); }
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void score(const KvCache& cache, int layer, HeadScores& scores) override;
  bool needs_moments() const override { return true; }

 private:
  SnapKVScorer alpha_;  // α, the observation-window attention
};

}  // namespace mkv
