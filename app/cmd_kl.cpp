// momentkv kl: KL divergence / same-top-1 / ΔNLL of every press against the full cache on
// teacher-forced text, llama-perplexity style; a markdown table on stdout, JSON with -o.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "commands.h"
#include "kv/press_catalog.h"
#include "kv/press_config.h"
#include "core/error.h"
#include "core/text_file.h"
#include "core/int_list.h"
#include "core/progress.h"
#include "eval/compression_eval.h"
#include "eval/held_out.h"

namespace mkv::cli {
namespace {

NcMode parse_nc(const std::string& text) {
  if (text == "both") return NcMode::Both;
  if (text == "on") return NcMode::On;
  if (text == "off") return NcMode::Off;
  fail("--nc must be both, on or off, got '{}'", text);
}

// "0.1234 [0.1100, 0.1400]": the mean and its bootstrap 95% interval over windows (when ≥ 2).
std::string with_interval(double mean, const std::vector<double>& per_window, const char* format) {
  std::string out = fmt::format(fmt::runtime(format), mean);
  if (const auto ci = bootstrap_mean_interval(per_window))
    out += fmt::format(fmt::runtime(std::string(" [") + format + ", " + format + "]"), ci->low, ci->high);
  return out;
}

struct WindowMeans {
  std::vector<double> kl, top1, delta_nll;  // (windows)
};
WindowMeans window_means(const CompressionEvalRow& r) {
  WindowMeans m;
  for (const DivergenceStats& w : r.per_window) {
    m.kl.push_back(w.mean_kl());
    m.top1.push_back(w.same_top1_percent());
    m.delta_nll.push_back(w.delta_nll());
  }
  return m;
}

void print_table(const std::vector<CompressionEvalRow>& rows, const KlOptions& o) {
  fmt::print("<!-- {} -->\n", provenance_line());
  fmt::print("{}; means over windows with bootstrap 95% intervals [low, high] when there are at least two\n\n",
             describe_windows(o.text));
  fmt::print("| press | NC | L | retained | stats (tok-eq) | KV bytes | KL(full‖press) | same top-1 % | ΔNLL |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    const WindowMeans m = window_means(r);
    fmt::print("| {} | {} | {} | {} | {:.1f} | {:.0f} | {} | {} | {} |\n", r.name, r.nc ? "on" : "off", r.budget,
               r.token_budget, r.moment_tokens, r.bytes_held, with_interval(r.stats.mean_kl(), m.kl, "{:.4f}"),
               with_interval(r.stats.same_top1_percent(), m.top1, "{:.1f}"),
               with_interval(r.stats.delta_nll(), m.delta_nll, "{:+.4f}"));
  }
  if (o.equal_bytes) fmt::print("\n(equal bytes: retained tokens + statistics ≤ L token-equivalents per KV head)\n");
}

nlohmann::json interval_json(const std::vector<double>& per_window) {
  const auto ci = bootstrap_mean_interval(per_window);
  return ci ? nlohmann::json::array({ci->low, ci->high}) : nlohmann::json(nullptr);
}

}  // namespace

int run_kl(const KlOptions& o) {
  if (!o.json_output.empty()) {  // checked before the run, which may take long
    const std::filesystem::path out(o.json_output);
    MKV_CHECK(!std::filesystem::is_directory(out), "-o '{}' is a directory; give a JSON file name", o.json_output);
    const std::filesystem::path folder = out.parent_path();
    MKV_CHECK(folder.empty() || std::filesystem::is_directory(folder), "-o '{}': '{}' {}", o.json_output,
              folder.string(), std::filesystem::exists(folder) ? "is not a folder" : "does not exist");
  }
  CompressionEvalConfig config;
  config.presses = o.presses.empty()
                       ? compressing_presses()
                       : o.presses;
  config.budgets = parse_int_list(o.budgets, "--budgets", 1);
  config.nc = parse_nc(o.nc);
  config.equal_bytes = o.equal_bytes;
  config.prompt_tokens = o.text.prompt_tokens;
  config.continuation_tokens = o.text.continuation_tokens;
  parse_text_split(o.text.split);  // a bad --split before the model loads

  LoadedModel m = load_model(o.model);
  const auto windows = comparison_windows(o.text, m);

  std::unique_ptr<ProgressBar> bar;
  const auto rows = run_compression_eval(*m.transformer, windows, config, [&](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<ProgressBar>("kl", total, 0);
    bar->advance();
  });
  if (bar) bar->finish();
  print_table(rows, o);

  if (!o.json_output.empty()) {
    nlohmann::json out = {{"provenance", provenance_line()},  {"model", m.file->path()},
                          {"windows", o.text.windows},        {"split", o.text.split},
                          {"seed", o.text.seed},              {"prompt_tokens", o.text.prompt_tokens},
                          {"continuation_tokens", o.text.continuation_tokens}, {"equal_bytes", o.equal_bytes},
                          {"rows", nlohmann::json::array()}};
    for (const auto& r : rows) {
      const WindowMeans means = window_means(r);
      out["rows"].push_back({{"press", r.press}, {"name", r.name}, {"nc", r.nc}, {"budget", r.budget},
                             {"token_budget", r.token_budget}, {"moment_token_equivalents", r.moment_tokens},
                             {"kv_bytes", r.bytes_held}, {"kl", r.stats.mean_kl()}, {"kl_ci95", interval_json(means.kl)},
                             {"same_top1_percent", r.stats.same_top1_percent()},
                             {"same_top1_percent_ci95", interval_json(means.top1)}, {"delta_nll", r.stats.delta_nll()},
                             {"delta_nll_ci95", interval_json(means.delta_nll)}, {"positions", r.stats.positions()},
                             {"per_window_kl", means.kl}});
    }
    write_text_file(o.json_output, out.dump(1) + "\n", "-o");
  }
  return 0;
}

}  // namespace mkv::cli
