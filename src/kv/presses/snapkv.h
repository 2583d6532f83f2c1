// SnapKV: "SnapKV: LLM Knows What You are Looking for Before Generation" (Li et al., 2024,
// arXiv 2404.14469). docs/METHODS.md §6.4.
//
// Score of row j: Σ over the last `window` queries (window=auto: observation_window(L) of the
// layer's budget L, selection.h) of softmax(τ Q_win Kᵀ) (full row, causal
// inside the window), 1-D max-pool (kernel, stride 1, same padding) over the rows before the
// window and, apart, over the window's rows, mean over the KV group's query heads. Rows inside the observation window are scored like any other row (by
// the later window queries that see them): which rows are protected is decided in one place,
// `select_keep` with the clamped window (docs/METHODS.md §5), never by a score.
//
// kernel=auto (the default) ties the pooling kernel to the layer's budget L (pooling_kernel): a
// kept span grows with what the budget can afford, so a value written as several tokens is kept
// whole instead of a fixed 7 rows around the attended one.
//
// Spec: snapkv:window=auto,kernel=auto,sinks=4,nc=0 (+ budget, decode_slack, groups, clip, means_only).
#pragma once

#include <memory>
#include <vector>

#include "kv/presses/observation_window.h"
#include "kv/presses/scorer_press.h"

namespace mkv {

// The max-pool kernel tied to a budget of L tokens per KV head: L/3 made odd (rounded up), within
// [7, 31] (docs/METHODS.md §6.4).
int pooling_kernel(int32_t budget);

class SnapKVScorer : public Scorer {
 public:
  static constexpr int kAutoKernel = 0;  // kernel = pooling_kernel(the layer's budget)

  // window: >= 1, or Protection::kAutoWindow; kernel: odd, or kAutoKernel.
  SnapKVScorer(int window, int kernel);
  void set_layer_budget(int32_t budget) override;
  void reset(const PressGeometry& geometry) override;
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void score(const KvCache& cache, int layer, HeadScores& scores) override;

 private:
  int window_, kernel_;
  int layer_window_, layer_kernel_;  // the window and kernel of the layer being scored
  ObservationWindow observed_;
};

class PressConfig;

// The SnapKV scorer of a validated config with window= and kernel= (snapkv, pyramidkv, adakv).
std::unique_ptr<Scorer> make_snapkv_scorer(const PressConfig& config);
// kernel= of a validated config: an odd integer, or SnapKVScorer::kAutoKernel.
int kernel_of(const PressConfig& config);

}  // namespace mkv
