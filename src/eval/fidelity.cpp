#include "eval/fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "core/error.h"
#include "core/median.h"
#include "engine/session.h"
#include "eval/report/svg_plot.h"
#include "kv/moment_groups.h"
#include "kv/nc.h"

namespace mkv {
namespace {

// Captures the post-RoPE queries of positions ≥ first (per layer, (C, n_heads, d_k)).
class QueryCapture : public ForwardObserver {
 public:
  QueryCapture(int n_layers, int row, int first, int count) : row_(row), first_(first), count_(count) {
    q_.assign(n_layers, std::vector<float>(static_cast<std::size_t>(count) * row, 0.0f));
  }
  void on_queries(int layer, int n_tokens, const float* q, const int32_t* positions, const KvCache&) override {
    for (int t = 0; t < n_tokens; ++t) {
      const int j = positions[t] - first_;
      if (j < 0 || j >= count_) continue;
      std::copy(q + static_cast<std::size_t>(t) * row_, q + static_cast<std::size_t>(t + 1) * row_,
                q_[layer].begin() + static_cast<std::size_t>(j) * row_);
    }
  }
  const float* query(int layer, int j) const { return q_[layer].data() + static_cast<std::size_t>(j) * row_; }

 private:
  int row_, first_, count_;
  std::vector<std::vector<float>> q_;
};

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

// One query's exact attention split into the retained and the evicted rows: each part's
// normalised output f_R / f_E (d_v) and log-partition, the retained share w_R of the full
// softmax, and the full output o = w_R f_R + (1 − w_R) f_E.
struct SplitAttention {
  std::vector<double> retained, evicted, full;  // (d_v) f_R, f_E, o
  double retained_lse = 0.0;
  double retained_weight = 1.0;                 // w_R
  bool has_evicted = false;

  // q (d_k); k (n, d_k) and v (n, d_v) the head's full rows; kept (n) which rows the press kept.
  void compute(const float* q, const float* k, const float* v, const std::vector<char>& kept, int n_visible,
               int dk, int dv, float tau, std::vector<double>& logits) {
    retained.assign(dv, 0.0);
    evicted.assign(dv, 0.0);
    full.assign(dv, 0.0);
    double top_retained = -INFINITY, top_evicted = -INFINITY;
    for (int i = 0; i < n_visible; ++i) {
      double d = 0;
      for (int a = 0; a < dk; ++a) d += double(q[a]) * k[static_cast<std::size_t>(i) * dk + a];
      logits[i] = tau * d;
      if (kept[i]) top_retained = std::max(top_retained, logits[i]);
      else top_evicted = std::max(top_evicted, logits[i]);
    }
    double z_retained = 0, z_evicted = 0;  // partition functions relative to each part's top logit
    for (int i = 0; i < n_visible; ++i) {
      const float* vi = v + static_cast<std::size_t>(i) * dv;
      if (kept[i]) {
        const double w = std::exp(logits[i] - top_retained);
        z_retained += w;
        for (int b = 0; b < dv; ++b) retained[b] += w * vi[b];
      } else {
        const double w = std::exp(logits[i] - top_evicted);
        z_evicted += w;
        for (int b = 0; b < dv; ++b) evicted[b] += w * vi[b];
      }
    }
    for (int b = 0; b < dv; ++b) retained[b] /= z_retained;
    retained_lse = top_retained + std::log(z_retained);
    retained_weight = 1.0;
    has_evicted = z_evicted > 0;
    if (has_evicted) {
      for (int b = 0; b < dv; ++b) evicted[b] /= z_evicted;
      const double evicted_lse = top_evicted + std::log(z_evicted);
      const double top = std::max(retained_lse, evicted_lse);
      retained_weight = std::exp(retained_lse - top) / (std::exp(retained_lse - top) + std::exp(evicted_lse - top));
    }
    for (int b = 0; b < dv; ++b)
      full[b] = has_evicted ? retained_weight * retained[b] + (1 - retained_weight) * evicted[b] : retained[b];
  }
};

// The paper's single moment summary of the evicted prompt rows (kept[i] == 0, i < P), for presses
// that track no moments of their own; null when nothing was evicted.
std::unique_ptr<MomentGroups> summary_of_evicted(const float* k, const float* v, const std::vector<char>& kept, int P,
                                                 int dk, int dv) {
  std::vector<float> evicted_keys, evicted_values;  // (n_e, d_k), (n_e, d_v)
  int64_t n_evicted = 0;
  for (int i = 0; i < P; ++i)
    if (!kept[i]) {
      evicted_keys.insert(evicted_keys.end(), k + static_cast<std::size_t>(i) * dk, k + static_cast<std::size_t>(i + 1) * dk);
      evicted_values.insert(evicted_values.end(), v + static_cast<std::size_t>(i) * dv, v + static_cast<std::size_t>(i + 1) * dv);
      ++n_evicted;
    }
  if (n_evicted == 0) return nullptr;
  MomentConfig config;
  config.track = true;
  auto summary = std::make_unique<MomentGroups>(dk, dv, config);
  summary->merge_rows(evicted_keys.data(), evicted_values.data(), n_evicted);
  return summary;
}

// Adds one query's figures to a head: evicted mass, relative error of the retained-only output
// and of the NC output against the full one, and cos(f_R, f_E).
void add_query(HeadFidelity& out, const SplitAttention& split, const MomentGroups* moments, const float* q, float tau) {
  const std::size_t dv = split.full.size();
  const double full_norm = std::max(norm(split.full), 1e-30);
  std::vector<float> corrected(dv);  // (d_v) the NC output
  double error_plain = 0, error_nc = 0;
  for (std::size_t b = 0; b < dv; ++b) {
    error_plain += (split.retained[b] - split.full[b]) * (split.retained[b] - split.full[b]);
    corrected[b] = static_cast<float>(split.retained[b]);
  }
  if (split.has_evicted && moments && moments->count() > 0)
    nc_blend(*moments, q, tau, static_cast<float>(split.retained_lse), corrected.data());
  for (std::size_t b = 0; b < dv; ++b) error_nc += (corrected[b] - split.full[b]) * (corrected[b] - split.full[b]);
  out.evicted_mass += 1.0 - split.retained_weight;
  out.error_plain += std::sqrt(error_plain) / full_norm;
  out.error_nc += std::sqrt(error_nc) / full_norm;
  ++out.queries;
  if (!split.has_evicted) return;
  const double retained_norm = norm(split.retained), evicted_norm = norm(split.evicted);
  double dot = 0;
  for (std::size_t b = 0; b < dv; ++b) dot += split.retained[b] * split.evicted[b];
  if (retained_norm > 0 && evicted_norm > 0) {
    out.cosine += std::clamp(dot / (retained_norm * evicted_norm), -1.0, 1.0);
    ++out.cosine_queries;
  }
}


// Every row of every KV head of a full cache holding T rows per head, as float32:
// keys[l·KVH + g] (T, d_k), values[l·KVH + g] (T, d_v).
void copy_full_rows(const KvCache& cache, int T, std::vector<std::vector<float>>& keys,
                    std::vector<std::vector<float>>& values) {
  const KvCacheShape& shape = cache.shape();
  const int dk = shape.head_dim_k, dv = shape.head_dim_v;
  keys.assign(static_cast<std::size_t>(shape.n_layers) * shape.n_kv_heads, {});
  values.assign(keys.size(), {});
  for (int l = 0; l < shape.n_layers; ++l)
    for (int g = 0; g < shape.n_kv_heads; ++g) {
      const KvHeadView view = cache.head(l, g);
      MKV_CHECK(view.length == T, "full cache head holds {} rows, expected {}", view.length, T);
      auto& k = keys[l * shape.n_kv_heads + g];
      auto& v = values[l * shape.n_kv_heads + g];
      k.resize(static_cast<std::size_t>(T) * dk);
      v.resize(static_cast<std::size_t>(T) * dv);
      for (int i = 0; i < T; ++i) {
        view.key(i, k.data() + static_cast<std::size_t>(i) * dk);
        view.value(i, v.data() + static_cast<std::size_t>(i) * dv);
      }
    }
}

// Turns a row's per-head sums into means, and the row's means over heads and per layer.
void average_heads(FidelityRow& row, int L, int H) {
  std::vector<double> masses, cosines, errors_plain, errors_nc;
  row.cosine_per_layer.assign(L, 0.0);
  row.error_plain_per_layer.assign(L, 0.0);
  row.error_nc_per_layer.assign(L, 0.0);
  std::vector<int> cos_count(L, 0);
  for (HeadFidelity& head : row.heads) {
    if (head.queries > 0) head.evicted_mass /= head.queries, head.error_plain /= head.queries, head.error_nc /= head.queries;
    if (head.cosine_queries > 0) {
      head.cosine /= head.cosine_queries;
      cosines.push_back(head.cosine);
      row.cosine_per_layer[head.layer] += head.cosine;
      ++cos_count[head.layer];
    }
    masses.push_back(head.evicted_mass);
    errors_plain.push_back(head.error_plain);
    errors_nc.push_back(head.error_nc);
    row.error_plain_per_layer[head.layer] += head.error_plain / H;
    row.error_nc_per_layer[head.layer] += head.error_nc / H;
  }
  for (int l = 0; l < L; ++l)
    row.cosine_per_layer[l] = cos_count[l] ? row.cosine_per_layer[l] / cos_count[l] : NAN;
  row.evicted_mass = mean_of(masses);
  row.cosine = mean_of(cosines);
  row.error_plain = mean_of(errors_plain);
  row.error_nc = mean_of(errors_nc);
  row.cosine_median = median(std::move(cosines));
}
}  // namespace

std::vector<FidelityRow> run_fidelity(Transformer& model, const std::vector<std::vector<int32_t>>& windows,
                                      const FidelityConfig& config,
                                      const std::function<void(int64_t, int64_t)>& on_progress) {
  const ModelConfig& mc = model.config();
  const int P = config.prompt_tokens, C = config.continuation_tokens;
  const int L = mc.n_layers, H = mc.n_heads, KVH = mc.n_kv_heads, dk = mc.head_dim_k, dv = mc.head_dim_v;
  const int group = H / KVH;
  const float tau = mc.attention_scale();
  MKV_CHECK(P > 0 && C > 0, "prompt and continuation lengths must be positive ({} and {})", P, C);
  MKV_CHECK(!windows.empty(), "no text windows to analyse");
  MKV_CHECK(!config.presses.empty() && !config.budgets.empty(), "give at least one press and one budget");

  std::vector<FidelityRow> rows;
  std::vector<PressConfig> row_presses;  // (rows) the press each row runs, NC off
  for (const PressConfig& press : config.presses) {
    require_compressing(press);
    press.require_budget_from_list();
    MKV_CHECK(!press.given("nc"), "press '{}': leave nc= out (fidelity measures both settings)", press.as_given());
    for (int32_t budget : config.budgets) {
      FidelityRow row;
      row.name = press.as_given();
      row_presses.push_back(press.with_param("nc", "0").with_budget(Budget{budget, 0.0}));
      row.spec = row_presses.back().spec();
      row.budget = budget;
      row.heads.resize(static_cast<std::size_t>(L) * H);
      for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h) row.heads[l * H + h].layer = l, row.heads[l * H + h].head = h;
      rows.push_back(std::move(row));
    }
  }

  const int64_t total = static_cast<int64_t>(windows.size()) * (1 + rows.size()) +
                        (config.model_output ? static_cast<int64_t>(windows.size()) * (1 + 2 * rows.size()) : 0);
  int64_t done = 0;
  const int T = P + C;
  for (const auto& window : windows) {
    MKV_CHECK(static_cast<int>(window.size()) >= T, "window of {} tokens, expected at least {}", window.size(), T);
    const std::span<const int32_t> tokens(window);
    // Full-cache run: every layer's continuation queries and the full keys/values.
    QueryCapture capture(L, H * dk, P, C);
    Session reference(model, SessionOptions{});
    reference.set_observer(&capture);
    std::vector<float> logits(static_cast<std::size_t>(T) * mc.n_vocab);
    reference.evaluate(tokens.first(T), logits.data());
    std::vector<std::vector<float>> K, V;  // (L·KVH) each (T, d_k) / (T, d_v): every row of every head
    copy_full_rows(reference.cache(), T, K, V);
    if (on_progress) on_progress(++done, total);

    for (std::size_t r = 0; r < rows.size(); ++r) {
      FidelityRow& row = rows[r];
      auto press = row_presses[r].make();
      SessionOptions options;
      options.press = press.get();
      Session session(model, options);
      session.prefill(tokens.first(P));
      const KvCache& cache = session.cache();
      const bool own_moments = cache.tracks_moments();

#pragma omp parallel for schedule(dynamic)
      for (int lg = 0; lg < L * KVH; ++lg) {
        const int l = lg / KVH, g = lg % KVH;
        const KvHeadView view = cache.head(l, g);
        std::vector<char> kept(T, 0);
        for (int i = 0; i < view.length; ++i) kept[view.positions[i]] = 1;
        for (int i = P; i < T; ++i) kept[i] = 1;
        const float* k = K[lg].data();
        const float* v = V[lg].data();
        // Moments of the evicted rows: the press's own (what deployment uses) or the paper's single summary.
        const std::unique_ptr<MomentGroups> summary = own_moments ? nullptr : summary_of_evicted(k, v, kept, P, dk, dv);
        const MomentGroups* moments = own_moments ? view.moments : summary.get();
        SplitAttention split;
        std::vector<double> logits(T);  // (T) scratch
        for (int h = g * group; h < (g + 1) * group; ++h)
          for (int j = 0; j < C; ++j) {
            const float* q = capture.query(l, j) + static_cast<std::size_t>(h) * dk;
            split.compute(q, k, v, kept, P + j + 1, dk, dv, tau, logits);
            add_query(row.heads[l * H + h], split, moments, q, tau);
          }
      }
      if (on_progress) on_progress(++done, total);
    }
  }

  for (FidelityRow& row : rows) average_heads(row, L, H);

  if (config.model_output) {
    CompressionEvalConfig ce;
    ce.presses = config.presses;
    ce.budgets = config.budgets;
    ce.nc = NcMode::Both;
    ce.prompt_tokens = P;
    ce.continuation_tokens = C;
    const auto out_rows = run_compression_eval(model, windows, ce, [&](int64_t, int64_t) {
      if (on_progress) on_progress(++done, total);
    });
    for (const auto& r : out_rows)
      for (FidelityRow& row : rows)
        if (row.name == r.name && row.budget == r.budget) {
          (r.nc ? row.output_nc_on : row.output_nc_off) = r.stats;
          row.has_output = true;
        }
  }
  return rows;
}

namespace {

nlohmann::ordered_json number(double x) { return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(); }

nlohmann::ordered_json divergence_json(const DivergenceStats& s) {
  return {{"kl", s.mean_kl()}, {"same_top1_percent", s.same_top1_percent()}, {"delta_nll", s.delta_nll()},
          {"positions", s.positions()}};
}

}  // namespace

nlohmann::ordered_json fidelity_json(const std::vector<FidelityRow>& rows, const FidelityConfig& config) {
  nlohmann::ordered_json out = {{"prompt_tokens", config.prompt_tokens},
                                {"continuation_tokens", config.continuation_tokens},
                                {"rows", nlohmann::ordered_json::array()}};
  for (const auto& r : rows) {
    nlohmann::ordered_json row = {{"press", r.name},
                                  {"spec", r.spec},
                                  {"budget", r.budget},
                                  {"evicted_mass", r.evicted_mass},
                                  {"cosine_mean", r.cosine},
                                  {"cosine_median", r.cosine_median},
                                  {"error_plain", r.error_plain},
                                  {"error_nc", r.error_nc},
                                  {"per_layer", nlohmann::ordered_json::array()},
                                  {"heads", nlohmann::ordered_json::array()}};
    for (std::size_t l = 0; l < r.cosine_per_layer.size(); ++l)
      row["per_layer"].push_back({{"layer", l}, {"cosine", number(r.cosine_per_layer[l])},
                                  {"error_plain", r.error_plain_per_layer[l]}, {"error_nc", r.error_nc_per_layer[l]}});
    for (const auto& h : r.heads)
      row["heads"].push_back({{"layer", h.layer}, {"head", h.head}, {"evicted_mass", h.evicted_mass},
                              {"cosine", h.cosine_queries ? number(h.cosine) : nlohmann::ordered_json()},
                              {"error_plain", h.error_plain}, {"error_nc", h.error_nc}, {"queries", h.queries}});
    if (r.has_output) {
      row["output_nc_off"] = divergence_json(r.output_nc_off);
      row["output_nc_on"] = divergence_json(r.output_nc_on);
    }
    out["rows"].push_back(std::move(row));
  }
  return out;
}

std::string fidelity_markdown(const std::vector<FidelityRow>& rows, const FidelityConfig& config,
                              const std::string& model_name, int windows) {
  std::string md = fmt::format(
      "# Attention fidelity: {}\n\n{} window(s): {} prompt tokens compressed once, {} continuation queries "
      "(teacher-forced, full-cache q/k/v) per layer and query head.\n\n"
      "- mass = evicted attention mass 1 − w_R; cos = cos(f_R, f_E) (exact, head means over heads that evicted "
      "anything); err = ‖o − o_full‖/‖o_full‖ without / with NC (head means).\n"
      "- model output: KL(full ‖ press), same top-1 %, ΔNLL over the continuation, NC off / on.\n\n",
      model_name, windows, config.prompt_tokens, config.continuation_tokens);
  md += "| press | L | mass | cos mean | cos median | err plain | err NC | NC Δerr | KL off | KL on | top-1 off | top-1 on | ΔNLL off | ΔNLL on |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const double red = r.error_plain > 0 ? 100.0 * (r.error_plain - r.error_nc) / r.error_plain : 0.0;
    md += fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.4f} | {:.4f} | {:+.1f}% |", r.name, r.budget,
                      r.evicted_mass, r.cosine, r.cosine_median, r.error_plain, r.error_nc, -red);
    if (r.has_output)
      md += fmt::format(" {:.4f} | {:.4f} | {:.1f} | {:.1f} | {:+.4f} | {:+.4f} |\n", r.output_nc_off.mean_kl(),
                        r.output_nc_on.mean_kl(), r.output_nc_off.same_top1_percent(),
                        r.output_nc_on.same_top1_percent(), r.output_nc_off.delta_nll(), r.output_nc_on.delta_nll());
    else
      md += " – | – | – | – | – | – |\n";
  }
  if (!rows.empty()) {
    md += "\n## Per layer: mean cos(f_R, f_E) / err plain → err NC\n\n| press | L |";
    const std::size_t n_layers = rows.front().cosine_per_layer.size();
    for (std::size_t l = 0; l < n_layers; ++l) md += fmt::format(" layer {} |", l);
    md += "\n|---|---|";
    for (std::size_t l = 0; l < n_layers; ++l) md += "---|";
    md += "\n";
    for (const auto& r : rows) {
      md += fmt::format("| {} | {} |", r.name, r.budget);
      for (std::size_t l = 0; l < n_layers; ++l)
        md += std::isfinite(r.cosine_per_layer[l])
                  ? fmt::format(" {:.2f} / {:.3f}→{:.3f} |", r.cosine_per_layer[l], r.error_plain_per_layer[l],
                                r.error_nc_per_layer[l])
                  : fmt::format(" – / {:.3f}→{:.3f} |", r.error_plain_per_layer[l], r.error_nc_per_layer[l]);
      md += "\n";
    }
  }
  md += "\nPlots: error_vs_budget.svg, cosine_vs_budget.svg, cosine_per_layer.svg, mass_vs_budget.svg";
  md += rows.empty() || !rows.front().has_output ? "\n" : ", kl_vs_budget.svg\n";
  return md;
}

std::vector<std::pair<std::string, std::string>> fidelity_plots(const std::vector<FidelityRow>& rows) {
  using eval::report::LinePlot;
  using eval::report::PlotSeries;
  std::vector<std::string> names;
  for (const auto& r : rows)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  auto by_budget = [&](const std::string& title, const std::string& y_label,
                       const std::vector<std::pair<std::string, std::function<double(const FidelityRow&)>>>& series) {
    LinePlot plot{title, "budget L (tokens per KV head)", y_label, {}, true};
    for (const auto& name : names)
      for (const auto& [suffix, value] : series) {
        PlotSeries s{name + suffix, {}, false};
        for (const auto& r : rows)
          if (r.name == name && std::isfinite(value(r))) s.points.emplace_back(r.budget, value(r));
        if (!s.points.empty()) plot.series.push_back(std::move(s));
      }
    return eval::report::render_svg(plot);
  };
  std::vector<std::pair<std::string, std::string>> plots;
  plots.emplace_back("error_vs_budget.svg",
                     by_budget("Relative attention-output error vs budget", "‖o − o_full‖ / ‖o_full‖",
                               {{"", [](const FidelityRow& r) { return r.error_plain; }},
                                {" +NC", [](const FidelityRow& r) { return r.error_nc; }}}));
  plots.emplace_back("cosine_vs_budget.svg", by_budget("Directional gap: mean cos(f_R, f_E)", "cos(f_R, f_E)",
                                                       {{"", [](const FidelityRow& r) { return r.cosine; }}}));
  plots.emplace_back("mass_vs_budget.svg", by_budget("Evicted attention mass", "1 − w_R",
                                                     {{"", [](const FidelityRow& r) { return r.evicted_mass; }}}));
  if (!rows.empty() && rows.front().has_output)
    plots.emplace_back("kl_vs_budget.svg",
                       by_budget("KL(full ‖ press) at the model output", "mean KL (nats)",
                                 {{"", [](const FidelityRow& r) { return r.output_nc_off.mean_kl(); }},
                                  {" +NC", [](const FidelityRow& r) { return r.output_nc_on.mean_kl(); }}}));
  // Per-layer cosine at the smallest budget.
  if (!rows.empty()) {
    int32_t smallest = rows.front().budget;
    for (const auto& r : rows) smallest = std::min(smallest, r.budget);
    LinePlot plot{fmt::format("Mean cos(f_R, f_E) per layer, L = {}", smallest), "layer", "cos(f_R, f_E)", {}, false};
    for (const auto& r : rows) {
      if (r.budget != smallest) continue;
      PlotSeries s{r.name, {}, false};
      for (std::size_t l = 0; l < r.cosine_per_layer.size(); ++l)
        if (std::isfinite(r.cosine_per_layer[l])) s.points.emplace_back(double(l), r.cosine_per_layer[l]);
      if (!s.points.empty()) plot.series.push_back(std::move(s));
    }
    plots.emplace_back("cosine_per_layer.svg", eval::report::render_svg(plot));
  }
  return plots;
}

}  // namespace mkv
