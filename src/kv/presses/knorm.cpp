// Key norm: "A Simple and Effective L2 Norm-Based Strategy for KV Cache Compression" (Devoto et al.,
// 2024, arXiv 2406.11430), as kvpress's KnormPress scores it.
//
// Query-agnostic: a row's score is minus its key's L2 norm,
//   score_j = −‖k_j‖,
// so the rows with the largest keys are evicted first (the paper finds low-norm keys draw the most
// attention). It reads no query: a context compressed before its question is known keeps the same
// rows (--protocol kvpress).
//
// This file is the whole press: the scorer and its registration. The catalogue composes it with
// the shared wrappers (sinks, budget, decode_slack, the moments and NC) and, through `alloc`, with
// every budget allocation; adakv:scorer=knorm is Ada-KV around it.
//
// Spec: knorm:sinks=4,alloc=uniform,safeguard=0.2,beta=20 (+ budget, decode_slack, nc, groups, clip,
// means_only).
#include <cmath>
#include <memory>
#include <vector>

#include "kv/press_config.h"
#include "kv/presses/press_params.h"
#include "kv/presses/scorer_press.h"

namespace mkv {
namespace {

class KnormScorer : public Scorer {
 public:
  void score(const KvCache& cache, int layer, HeadScores& scores) override {
    const int d = geometry_.head_dim_k;
    scores.resize(geometry_.n_kv_heads);
    for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
      const KvHeadView view = cache.head(layer, kv);
      const HeadRows keys = HeadRows::keys(view);  // (length, d_k)
      std::vector<float>& out = scores[kv];
      out.resize(view.length);
      for (int32_t j = 0; j < view.length; ++j) {
        double sq = 0.0;
        for (int i = 0; i < d; ++i) sq += double(keys.row(j)[i]) * keys.row(j)[i];
        out[j] = float(-std::sqrt(sq));
      }
    }
  }
};

const PressRegistration kRegistration{PressDef{
    .name = "knorm",
    .python_class = "Knorm",
    .summary = "key norm: the keys with the smallest L2 norm kept (query-agnostic)",
    .order = 75,
    .params = {press_params::sinks(), press_params::alloc("uniform", "budget allocation (allocation.h)"),
               press_params::safeguard(), press_params::beta()},
    .scorer = [](const PressConfig&) -> std::unique_ptr<Scorer> { return std::make_unique<KnormScorer>(); },
    .adaptive_scorer = true,
}};

}  // namespace
}  // namespace mkv
