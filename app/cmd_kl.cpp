// momentkv kl: KL divergence / same-top-1 / ΔNLL of every press against the full cache on
// teacher-forced text, llama-perplexity style; a markdown table on stdout, JSON with -o.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "kv/press_registry.h"
#include "core/error.h"
#include "core/text_file.h"
#include "core/int_list.h"
#include "core/progress.h"
#include "eval/compression_eval.h"

namespace mkv::cli {
namespace {

NcMode parse_nc(const std::string& text) {
  if (text == "both") return NcMode::Both;
  if (text == "on") return NcMode::On;
  if (text == "off") return NcMode::Off;
  fail("--nc must be both, on or off, got '{}'", text);
}

std::string read_text(const std::string& flag) {
  const std::string path = flag.empty() ? find_shared_asset("text/tinystories_val.txt") : flag;
  MKV_CHECK(!path.empty(), "no text given and ../shared/assets/text/tinystories_val.txt was not found; pass -f FILE");
  return read_text_file(path, "text file (-f)");
}

void print_table(const std::vector<CompressionEvalRow>& rows, bool equal_bytes) {
  fmt::print("| press | NC | L | retained | stats (tok-eq) | KV bytes | KL(full‖press) | same top-1 % | ΔNLL |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows)
    fmt::print("| {} | {} | {} | {} | {:.1f} | {:.0f} | {:.4f} | {:.1f} | {:+.4f} |\n", r.name, r.nc ? "on" : "off",
               r.budget, r.token_budget, r.moment_tokens, r.bytes_held, r.stats.mean_kl(), r.stats.same_top1_percent(),
               r.stats.delta_nll());
  if (equal_bytes) fmt::print("\n(equal bytes: retained tokens + statistics ≤ L token-equivalents per KV head)\n");
}

}  // namespace

int run_kl(const KlOptions& o) {
  MKV_CHECK(o.windows > 0, "--windows must be positive, got {}", o.windows);
  if (!o.json_output.empty()) {  // checked before the run, which may take long
    const std::filesystem::path out(o.json_output);
    MKV_CHECK(!std::filesystem::is_directory(out), "-o '{}' is a directory; give a JSON file name", o.json_output);
    MKV_CHECK(out.parent_path().empty() || std::filesystem::is_directory(out.parent_path()),
              "-o '{}': the folder '{}' does not exist", o.json_output, out.parent_path().string());
  }
  CompressionEvalConfig config;
  config.presses = o.presses.empty()
                       ? compressing_presses()
                       : o.presses;
  config.budgets = parse_int_list(o.budgets, "--budgets", 1);
  config.nc = parse_nc(o.nc);
  config.equal_bytes = o.equal_bytes;
  config.prompt_tokens = o.prompt_tokens;
  config.continuation_tokens = o.continuation_tokens;
  const std::string text = read_text(o.text_file);

  LoadedModel m = load_model(o.model);
  const int length = o.prompt_tokens + o.continuation_tokens + 1;
  MKV_CHECK(length - 1 <= m.transformer->config().context_length,
            "prompt + continuation = {} positions exceeds the model's context {}", length - 1,
            m.transformer->config().context_length);
  const std::vector<int32_t> tokens = m.tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/false);
  const auto windows = text_windows(tokens, m.tokenizer->vocab().bos, length, o.windows);
  MKV_CHECK(static_cast<int>(windows.size()) == o.windows, "the text has {} tokens: too short for {} windows of {}",
            tokens.size(), o.windows, length);

  std::unique_ptr<ProgressBar> bar;
  const auto rows = run_compression_eval(*m.transformer, windows, config, [&](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<ProgressBar>("kl", total, 0);
    bar->advance();
  });
  if (bar) bar->finish();
  print_table(rows, o.equal_bytes);

  if (!o.json_output.empty()) {
    nlohmann::json out = {{"model", m.file->path()}, {"windows", o.windows}, {"prompt_tokens", o.prompt_tokens},
                          {"continuation_tokens", o.continuation_tokens}, {"equal_bytes", o.equal_bytes},
                          {"rows", nlohmann::json::array()}};
    for (const auto& r : rows)
      out["rows"].push_back({{"press", r.press}, {"name", r.name}, {"nc", r.nc}, {"budget", r.budget},
                             {"token_budget", r.token_budget}, {"moment_token_equivalents", r.moment_tokens},
                             {"kv_bytes", r.bytes_held}, {"kl", r.stats.mean_kl()},
                             {"same_top1_percent", r.stats.same_top1_percent()}, {"delta_nll", r.stats.delta_nll()},
                             {"positions", r.stats.positions()}});
    std::ofstream file(o.json_output);
    MKV_CHECK(file.good(), "cannot write '{}'", o.json_output);
    file << out.dump(1) << "\n";
  }
  return 0;
}

}  // namespace mkv::cli
