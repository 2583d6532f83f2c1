// H2O: "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models"
// (Zhang et al., NeurIPS 2023, arXiv 2306.14048). docs/METHODS.md §6.3.
//
// Score of row j: Σ over all observed queries t of the causal softmax attention A_{t,j}, mean
// over the KV group's query heads (accumulated in observe(), from q and the cache's keys).
// Keeps the top L − window plus the window (and the sinks). With decode_slack the sums keep
// accumulating during decoding and eviction repeats when a head exceeds L + slack.
//
// Spec: h2o:window=auto,sinks=4,nc=0 (+ budget, decode_slack, groups, clip, means_only).
// Cost: observe is O(n_tokens · length · d) per head (quadratic in the prompt).
#pragma once

#include <vector>

#include "kv/presses/scorer_press.h"

namespace mkv {

class H2OScorer : public Scorer {
 public:
  void reset(const PressGeometry& geometry) override;
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void score(const KvCache& cache, int layer, HeadScores& scores) override;
  void on_retain(int layer, int kv_head, std::span<const int32_t> keep) override;

 private:
  // (n_layers · n_kv_heads) vectors aligned with the head's rows: accumulated attention.
  std::vector<std::vector<double>> column_sums_;
};

}  // namespace mkv
