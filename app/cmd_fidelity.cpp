// momentkv fidelity: the paper's attention analysis on a real model (docs/METHODS.md §7): per layer
// and head, evicted mass, cos(f_R, f_E), relative attention-output error without / with NC, and
// KL / same-top-1 / ΔNLL at the model output. Writes DIR/fidelity.md, DIR/fidelity.json and SVG plots.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "commands.h"
#include "eval/held_out.h"
#include "kv/press_catalog.h"
#include "kv/press_config.h"
#include "core/error.h"
#include "core/int_list.h"
#include "core/progress.h"
#include "core/text_file.h"
#include "eval/fidelity.h"

namespace mkv::cli {

int run_fidelity(const FidelityOptions& o) {
  MKV_CHECK(!o.output_dir.empty(), "-o DIR is required (fidelity.md, fidelity.json and plots are written there)");
  FidelityConfig config;
  config.presses = o.presses.empty()
                       ? compressing_presses()
                       : o.presses;
  config.budgets = parse_int_list(o.budgets, "--budgets", 1);
  config.prompt_tokens = o.text.prompt_tokens;
  config.continuation_tokens = o.text.continuation_tokens;
  config.model_output = !o.no_output_metrics;

  parse_text_split(o.text.split);  // a bad --split before the model loads
  LoadedModel m = load_model(o.model);
  const auto windows = comparison_windows(o.text, m);

  std::filesystem::create_directories(o.output_dir);
  std::unique_ptr<ProgressBar> bar;
  const auto rows = mkv::run_fidelity(*m.transformer, windows, config, [&](int64_t, int64_t total) {
    if (!bar) bar = std::make_unique<ProgressBar>("fidelity", total, 0);
    bar->advance();
  });
  if (bar) bar->finish();

  const std::filesystem::path dir(o.output_dir);
  const std::string model_name = std::filesystem::path(m.file->path()).filename().string();
  const std::string md = fmt::format("<!-- {} -->\n{}\n\n", provenance_line(), describe_windows(o.text)) +
                         fidelity_markdown(rows, config, model_name, o.text.windows);
  write_text_file(dir / "fidelity.md", md);
  auto json = fidelity_json(rows, config);
  json["model"] = m.file->path();
  json["text"] = o.text.text_file.empty() ? find_shared_asset("text/tinystories_val.txt") : o.text.text_file;
  json["windows"] = o.text.windows;
  json["split"] = o.text.split;
  json["provenance"] = provenance_line();
  json["seed"] = o.text.seed;
  write_text_file(dir / "fidelity.json", json.dump(1) + "\n");
  for (const auto& [name, svg] : fidelity_plots(rows)) write_text_file(dir / name, svg);
  fmt::print("{}", md);
  fmt::print("\nwrote {}/fidelity.md, fidelity.json and plots\n", o.output_dir);
  return 0;
}

}  // namespace mkv::cli
