// Budget allocation: how a scorer press shares its budget L out across layers and KV heads. A
// component ScorerPress composes with any scorer (docs/METHODS.md §6):
//   uniform   every head of every layer keeps L;
//   pyramid   PyramidKV: layer budgets decreasing with depth (pyramid_budgets), uniform in a layer;
//   adaptive  Ada-KV: inside a layer, heads share H·L by their scores (adaptive_budgets), safeguard a.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/selection.h"

namespace mkv {

// scores[kv_head][row]: higher = keep; one vector per KV head of the layer, of the head's length.
using HeadScores = std::vector<std::vector<float>>;

enum class Allocation { Uniform, Pyramid, Adaptive };

class BudgetAllocation {
 public:
  virtual ~BudgetAllocation() = default;

  // The budget per KV head of `layer` (window included) for a press budget L, when the sequence
  // has seen `seen` tokens.
  virtual int32_t layer_budget(int32_t budget, const Protection& protection, int32_t seen, int n_layers,
                               int layer) const {
    return budget;
  }
  // Whether a layer whose heads hold `lengths` rows must be compressed to `limit` rows per head.
  virtual bool over(std::span<const int32_t> lengths, int32_t limit) const;
  // Rows each head keeps (window included) when the layer's budget is `layer_budget`;
  // `protection` is already clamped to it.
  virtual std::vector<int32_t> head_keeps(const HeadScores& scores, int32_t layer_budget,
                                          const Protection& protection) const {
    return std::vector<int32_t>(scores.size(), layer_budget);
  }
};

// beta: PyramidKV's smallest layer budget (L − window)/β; safeguard: Ada-KV's a.
std::unique_ptr<BudgetAllocation> make_allocation(Allocation kind, double beta, double safeguard);

}  // namespace mkv
