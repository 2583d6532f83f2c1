// StreamingLLM: "Efficient Streaming Language Models with Attention Sinks" (Xiao et al., ICLR
// 2024, arXiv 2309.17453). docs/METHODS.md §6.2.
//
// Keeps the first `sinks` tokens and the most recent L − sinks: the score of a row is its
// position, so the shared top-k keeps the newest.
//
// Spec: streaming_llm:sinks=4,nc=0 (+ budget, decode_slack, groups, clip, means_only).

#include "kv/press_config.h"
#include "kv/presses/press_params.h"
#include "kv/presses/scorer_press.h"

namespace mkv {
namespace {

class RecencyScorer : public Scorer {
 public:
  void score(const KvCache& cache, int layer, HeadScores& scores) override;
};

void RecencyScorer::score(const KvCache& cache, int layer, HeadScores& scores) {
  scores.resize(geometry_.n_kv_heads);
  for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
    const KvHeadView view = cache.head(layer, kv);
    scores[kv].assign(view.positions, view.positions + view.length);
  }
}

const PressRegistration kRegistration{PressDef{
    .name = "streaming_llm",
    .python_class = "StreamingLLM",
    .summary = "StreamingLLM: sinks + most recent tokens",
    .order = 10,
    .params = {press_params::sinks()},
    .scorer = [](const PressConfig&) -> std::unique_ptr<Scorer> { return std::make_unique<RecencyScorer>(); },
}};
}  // namespace
}  // namespace mkv
