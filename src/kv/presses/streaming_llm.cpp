#include "kv/presses/streaming_llm.h"

namespace mkv {

void RecencyScorer::score(const KvCache& cache, int layer, HeadScores& scores) {
  scores.resize(geometry_.n_kv_heads);
  for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
    const KvHeadView view = cache.head(layer, kv);
    scores[kv].assign(view.positions, view.positions + view.length);
  }
}

}  // namespace mkv
