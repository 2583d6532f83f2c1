// StreamingLLM: "Efficient Streaming Language Models with Attention Sinks" (Xiao et al., ICLR
// 2024, arXiv 2309.17453). docs/METHODS.md §6.2.
//
// Keeps the first `sinks` tokens and the most recent L − sinks: the score of a row is its
// position, so the shared top-k keeps the newest.
//
// Spec: streaming_llm:sinks=4,nc=0 (+ budget, decode_slack, groups, clip, means_only).
#pragma once

#include "kv/presses/scorer_press.h"

namespace mkv {

class RecencyScorer : public Scorer {
 public:
  void score(const KvCache& cache, int layer, HeadScores& scores) override;
};

}  // namespace mkv
