// Budget allocation: how a scorer press shares its budget L out across layers and KV heads. A
// component ScorerPress composes with any scorer (docs/METHODS.md §6):
//   uniform   every head of every layer keeps L;
//   pyramid   PyramidKV: layer budgets decreasing with depth (pyramid_budgets), uniform in a layer;
//   adaptive  Ada-KV: inside a layer, heads share H·L by their scores (adaptive_budgets), safeguard a;
//   pyramid_adaptive  both: PyramidKV's layer budgets, shared among the layer's heads as Ada-KV does;
//   global    Ada-KV's rule over every head of every layer at once: they share n_layers·H·L.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv/selection.h"

namespace mkv {

// scores[kv_head][row]: higher = keep; one vector per KV head of the layer, of the head's length.
using HeadScores = std::vector<std::vector<float>>;
// Some heads' scores: one layer's, or every layer's (head h of layer l at l·n_kv_heads + h).
using HeadScoresView = std::span<const std::vector<float>>;

enum class Allocation { Uniform, Pyramid, Adaptive, PyramidAdaptive, Global };

// The allocation a spec's `alloc` names ("uniform", "pyramid", "adaptive", "pyramid_adaptive",
// "global"); nullopt for any other text.
std::optional<Allocation> allocation_from_name(std::string_view name);

// Whether the layer budgets are PyramidKV's (a layer may hold up to 2L per head).
inline bool has_pyramid_layers(Allocation kind) {
  return kind == Allocation::Pyramid || kind == Allocation::PyramidAdaptive;
}

class BudgetAllocation {
 public:
  virtual ~BudgetAllocation() = default;

  // The budget per KV head of `layer` (window included) for a press budget L, when the sequence
  // has seen `seen` tokens.
  virtual int32_t layer_budget(int32_t budget, const Protection& protection, int32_t seen, int n_layers,
                               int layer) const {
    return budget;
  }
  // Whether the heads of all layers share one budget (head_keeps then gets every layer's heads).
  virtual bool across_layers() const { return false; }
  // Whether a layer whose heads hold `lengths` rows must be compressed to `limit` rows per head.
  virtual bool over(std::span<const int32_t> lengths, int32_t limit) const;
  // Rows each head keeps (window included) when the layer's budget is `layer_budget`;
  // `protection` is already clamped to it.
  virtual std::vector<int32_t> head_keeps(HeadScoresView scores, int32_t layer_budget,
                                          const Protection& protection) const {
    return std::vector<int32_t>(scores.size(), layer_budget);
  }
};

// beta: PyramidKV's smallest layer budget (L − window)/β; safeguard: Ada-KV's a.
std::unique_ptr<BudgetAllocation> make_allocation(Allocation kind, double beta, double safeguard);

}  // namespace mkv
