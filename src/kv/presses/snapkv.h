// SnapKV: "SnapKV: LLM Knows What You are Looking for Before Generation" (Li et al., 2024,
// arXiv 2404.14469). docs/METHODS.md §6.4.
//
// Score of row j: Σ over the last `window` queries of softmax(τ Q_win Kᵀ) (full row, causal
// inside the window), 1-D max-pool (kernel, stride 1, same padding) over the rows before the
// window, mean over the KV group's query heads. Rows inside the observation window get the
// head's maximum score (kvpress), so they are preferred when the budget cuts into the window.
//
// Spec: snapkv:window=32,kernel=7,sinks=4,nc=0 (+ budget, decode_slack, groups, clip, means_only).
#pragma once

#include <vector>

#include "kv/presses/observation_window.h"
#include "kv/presses/scorer_press.h"

namespace mkv {

class SnapKVScorer : public Scorer {
 public:
  SnapKVScorer(int window, int kernel);
  void reset(const PressGeometry& geometry) override;
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void score(const KvCache& cache, int layer, HeadScores& scores) override;

 private:
  int window_, kernel_;
  ObservationWindow observed_;
};

}  // namespace mkv
