// Attention fidelity of presses (docs/METHODS.md §7, the paper's core analysis): for text windows,
// each press × budget compresses the prompt once; then, per layer and query head, every
// continuation query of the full-cache run (same q, same keys/values) is split into the retained
// rows R (what the press kept, plus the continuation itself) and the evicted rows E, and we measure
//   evicted mass 1 − w_R,  the directional gap cos(f_R, f_E) (exact: E is still at hand),
//   ‖o_R − o_full‖/‖o_full‖ without NC and with NC (moments of E, the press's moment config or the
//   paper's single summary for presses that track none);
// and at the model output KL / same top-1 / ΔNLL against the full cache (run_compression_eval).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/compression_eval.h"
#include "model/transformer.h"

namespace mkv {

struct FidelityConfig {
  std::vector<PressConfig> presses;  // presses without budget/nc
  std::vector<int32_t> budgets;
  int prompt_tokens = 448;           // BOS included
  int continuation_tokens = 64;
  bool model_output = true;          // also KL / top-1 / ΔNLL (NC off and on)
};

// Means over windows and continuation queries of one (layer, query head).
struct HeadFidelity {
  int layer = 0, head = 0;
  double evicted_mass = 0;  // 1 − w_R
  double cosine = 0;        // cos(f_R, f_E); NaN-free: only queries with E non-empty count
  double error_plain = 0;   // ‖f_R − o_full‖ / ‖o_full‖
  double error_nc = 0;      // ‖o_NC − o_full‖ / ‖o_full‖
  int64_t queries = 0;      // queries counted (all)
  int64_t cosine_queries = 0;  // queries with evicted rows
};

struct FidelityRow {
  std::string name;   // press name
  std::string spec;   // canonical spec as run (NC off)
  int32_t budget = 0;
  std::vector<HeadFidelity> heads;  // (n_layers · n_heads), layer-major
  // Head means (cosine over heads that evicted anything).
  double evicted_mass = 0, cosine = 0, cosine_median = 0, error_plain = 0, error_nc = 0;
  std::vector<double> cosine_per_layer;  // mean over the layer's heads
  std::vector<double> error_plain_per_layer, error_nc_per_layer;
  bool has_output = false;
  DivergenceStats output_nc_off, output_nc_on;
};

// windows as for run_compression_eval (prompt + continuation + 1 tokens).
std::vector<FidelityRow> run_fidelity(Transformer& model, const std::vector<std::vector<int32_t>>& windows,
                                      const FidelityConfig& config,
                                      const std::function<void(int64_t, int64_t)>& on_progress = {});

// The rows as JSON / a markdown report; SVG plots (file name → document).
nlohmann::ordered_json fidelity_json(const std::vector<FidelityRow>& rows, const FidelityConfig& config);
std::string fidelity_markdown(const std::vector<FidelityRow>& rows, const FidelityConfig& config,
                              const std::string& model_name, int windows);
std::vector<std::pair<std::string, std::string>> fidelity_plots(const std::vector<FidelityRow>& rows);

}  // namespace mkv
