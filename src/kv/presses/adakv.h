// Ada-KV: "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget Allocation for Efficient LLM
// Inference" (Feng et al., 2024, arXiv 2407.11550). docs/METHODS.md §6.6.
//
// Wraps any scorer: inside a layer of H KV heads with candidate budget B = L − window − sinks,
// the global top H·B scores give c_h per head; head h keeps b_h = round(c_h(1 − a) + aB) plus
// its protected rows (adaptive_budgets in selection.h). Heads become ragged.
//
// With pyramid_layers (alloc=pyramid_adaptive, the paper's Ada-Pyramid) the layer budgets are
// PyramidKV's instead of L each.
//
// Spec: adakv:scorer=snapkv,safeguard=0.2,window=auto,kernel=auto,sinks=4,alloc=adaptive,beta=20,nc=0
// (+ budget, ...); scorer ∈ {snapkv, h2o} takes that scorer's parameters; MomentKV with this
// allocation is the press momentkv:alloc=adaptive (one name per method).
#pragma once

#include <memory>

#include "core/error.h"
#include "kv/presses/scorer_press.h"

namespace mkv {

// options.allocation: Adaptive, PyramidAdaptive or Global (the registry's alloc choices).
inline std::unique_ptr<Press> make_adakv(std::unique_ptr<Scorer> scorer, const ScorerPressOptions& options) {
  MKV_ASSERT(options.allocation == Allocation::Adaptive || options.allocation == Allocation::PyramidAdaptive ||
             options.allocation == Allocation::Global);
  return std::make_unique<ScorerPress>(std::move(scorer), options);
}

}  // namespace mkv
