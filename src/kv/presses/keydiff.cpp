// KeyDiff: "KeyDiff: Key Similarity-Based KV Cache Eviction for Long-Context LLM Inference in
// Resource-Constrained Environments" (Park et al., 2025, arXiv 2504.15364), as kvpress scores it.
//
// Query-agnostic: a row's score is how much its key differs from the head's average key direction,
//   anchor = mean_j k_j/‖k_j‖ over the head's rows,  score_j = −cos(k_j, anchor),
// so the rows whose keys point where most keys point are evicted first. It reads no query, so a
// context compressed before its question is known keeps the same rows (--protocol kvpress).
// Computed over the rows the head holds when it is compressed (with chunked prefill, after each
// chunk: the anchor of the rows kept so far and the new ones).
//
// This file is the whole press: the scorer and its registration. The catalogue composes it with
// the shared wrappers (sinks, budget, decode_slack, the moments and NC) and, through `alloc`, with
// every budget allocation; adakv:scorer=keydiff is Ada-KV around it.
//
// Spec: keydiff:sinks=4,alloc=uniform,safeguard=0.2,beta=20 (+ budget, decode_slack, nc, groups, clip,
// means_only).
#include <cmath>
#include <memory>
#include <vector>

#include "kv/press_config.h"
#include "kv/presses/press_params.h"
#include "kv/presses/scorer_press.h"

namespace mkv {
namespace {

class KeyDiffScorer : public Scorer {
 public:
  void score(const KvCache& cache, int layer, HeadScores& scores) override {
    const int d = geometry_.head_dim_k;
    scores.resize(geometry_.n_kv_heads);
    for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
      const KvHeadView view = cache.head(layer, kv);
      const HeadRows keys = HeadRows::keys(view);  // (length, d_k)
      std::vector<double> norms(view.length);      // (length) ‖k_j‖
      std::vector<double> anchor(d, 0.0);          // (d_k) mean of the unit keys
      for (int32_t j = 0; j < view.length; ++j) {
        double sq = 0.0;
        for (int i = 0; i < d; ++i) sq += double(keys.row(j)[i]) * keys.row(j)[i];
        norms[j] = std::sqrt(sq);
        if (norms[j] > 0.0)
          for (int i = 0; i < d; ++i) anchor[i] += keys.row(j)[i] / norms[j];
      }
      double anchor_norm = 0.0;
      for (double a : anchor) anchor_norm += a * a;
      anchor_norm = std::sqrt(anchor_norm);
      std::vector<float>& out = scores[kv];
      out.assign(view.length, 0.0f);  // a zero key or anchor has cosine 0
      for (int32_t j = 0; j < view.length; ++j) {
        if (norms[j] == 0.0 || anchor_norm == 0.0) continue;
        double dot = 0.0;
        for (int i = 0; i < d; ++i) dot += keys.row(j)[i] * anchor[i];
        out[j] = float(-dot / (norms[j] * anchor_norm));
      }
    }
  }
};

const PressRegistration kRegistration{PressDef{
    .name = "keydiff",
    .python_class = "KeyDiff",
    .summary = "KeyDiff: keys least like the head's mean key direction (query-agnostic)",
    .order = 70,
    .params = {press_params::sinks(), press_params::alloc("uniform", "budget allocation (allocation.h)"),
               press_params::safeguard(), press_params::beta()},
    .scorer = [](const PressConfig&) -> std::unique_ptr<Scorer> { return std::make_unique<KeyDiffScorer>(); },
    .adaptive_scorer = true,
}};

}  // namespace
}  // namespace mkv
