// PyramidKV: "PyramidKV: Dynamic KV Cache Compression based on Pyramidal Information Funneling"
// (Cai et al., 2024, arXiv 2406.02069). docs/METHODS.md §6.5.
//
// SnapKV scores; layer budgets decrease linearly with depth (pyramid_budgets in selection.h):
// B = L − window, min = B/β, max = 2B − min, uniform when the prompt is shorter than 2B.
//
// Spec: pyramidkv:window=auto,kernel=auto,beta=20,sinks=4,nc=0 (+ budget, decode_slack, ...).
#pragma once

#include <memory>

#include "kv/presses/snapkv.h"

namespace mkv {

inline std::unique_ptr<Press> make_pyramidkv(int window, int kernel, ScorerPressOptions options) {
  options.allocation = Allocation::Pyramid;
  return std::make_unique<ScorerPress>(std::make_unique<SnapKVScorer>(window, kernel), options);
}

}  // namespace mkv
