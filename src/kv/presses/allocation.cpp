#include "kv/presses/allocation.h"

#include <algorithm>
#include <numeric>

namespace mkv {
namespace {

class PyramidAllocation : public BudgetAllocation {
 public:
  explicit PyramidAllocation(double beta) : beta_(beta) {}
  int32_t layer_budget(int32_t budget, const Protection& protection, int32_t seen, int n_layers,
                       int layer) const override {
    const int window = clamp_protection(protection, budget).window;
    return pyramid_budgets(budget, window, seen, n_layers, beta_)[layer];
  }

 private:
  double beta_;
};

// Heads are ragged by design: the layer as a whole is over its budget or not. The layer budgets
// are uniform (Ada-KV), or PyramidKV's when pyramid_layers.
class AdaptiveAllocation : public BudgetAllocation {
 public:
  AdaptiveAllocation(double safeguard, bool pyramid_layers, double beta, bool across_layers = false)
      : safeguard_(safeguard), pyramid_layers_(pyramid_layers), across_layers_(across_layers), pyramid_(beta) {}
  bool across_layers() const override { return across_layers_; }
  int32_t layer_budget(int32_t budget, const Protection& protection, int32_t seen, int n_layers,
                       int layer) const override {
    return pyramid_layers_ ? pyramid_.layer_budget(budget, protection, seen, n_layers, layer) : budget;
  }
  bool over(std::span<const int32_t> lengths, int32_t limit) const override {
    return std::accumulate(lengths.begin(), lengths.end(), int64_t{0}) > int64_t(lengths.size()) * limit;
  }
  std::vector<int32_t> head_keeps(HeadScoresView scores, int32_t layer_budget,
                                  const Protection& protection) const override {
    const int32_t candidate_budget = layer_budget - protection.sinks - protection.window;
    std::vector<int32_t> keep = adaptive_budgets(scores, protection, candidate_budget, safeguard_);
    for (std::size_t h = 0; h < keep.size(); ++h) keep[h] += protected_count(int32_t(scores[h].size()), protection);
    return keep;
  }

 private:
  double safeguard_;
  bool pyramid_layers_;
  bool across_layers_;
  PyramidAllocation pyramid_;
};

}  // namespace

std::optional<Allocation> allocation_from_name(std::string_view name) {
  if (name == "uniform") return Allocation::Uniform;
  if (name == "pyramid") return Allocation::Pyramid;
  if (name == "adaptive") return Allocation::Adaptive;
  if (name == "pyramid_adaptive") return Allocation::PyramidAdaptive;
  if (name == "global") return Allocation::Global;
  return std::nullopt;
}

bool BudgetAllocation::over(std::span<const int32_t> lengths, int32_t limit) const {
  return !lengths.empty() && *std::max_element(lengths.begin(), lengths.end()) > limit;
}

std::unique_ptr<BudgetAllocation> make_allocation(Allocation kind, double beta, double safeguard) {
  switch (kind) {
    case Allocation::Pyramid: return std::make_unique<PyramidAllocation>(beta);
    case Allocation::Adaptive: return std::make_unique<AdaptiveAllocation>(safeguard, false, beta);
    case Allocation::PyramidAdaptive: return std::make_unique<AdaptiveAllocation>(safeguard, true, beta);
    case Allocation::Global: return std::make_unique<AdaptiveAllocation>(safeguard, false, beta, true);
    case Allocation::Uniform: break;
  }
  return std::make_unique<BudgetAllocation>();
}

}  // namespace mkv
