// momentkv eval ruler | longbench: benchmark runs with presses × budgets, per-sample results
// appended (resume on restart), --shard i/n, a progress bar with ETA.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "commands.h"
#include "core/error.h"
#include "core/int_list.h"
#include "core/text_file.h"
#include "eval/longbench/longbench_eval.h"
#include "eval/ruler/ruler_eval.h"

namespace mkv::cli {
namespace {

constexpr int64_t kMaxRulerSamples = 100000;  // --samples: samples are generated and held in memory up front

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Fills the fields every evaluation shares from the common flags; loads the model.
LoadedModel fill_run_config(const EvalCommonOptions& o, eval::EvalRunConfig& c) {
  c.settings = eval::expand_press_settings(o.presses.empty() ? std::vector<PressConfig>{PressConfig()} : o.presses,
                                           parse_int_list(o.budgets, "--budgets", 1));
  c.protocol = eval::parse_protocol(o.protocol);
  c.chat_template = o.chat_template;
  MKV_CHECK(!o.output_dir.empty(), "-o DIR is required");
  c.output_dir = o.output_dir;
  c.shard = eval::ShardSpec::parse(o.shard);
  c.max_samples = o.max_samples;
  LoadedModel m = load_model(o.model);
  c.session = session_options(o.model, m, o.compress_each_chunk);
  c.model_name = std::filesystem::path(m.file->path()).stem().string();
  return m;
}

}  // namespace

int run_eval_ruler(const EvalRulerOptions& o) {
  eval::RulerEvalConfig c;
  c.tasks = split_list(o.tasks);
  c.length = o.length;
  c.samples = o.samples;
  MKV_CHECK(o.length > 0, "--length must be positive, got {}", o.length);
  MKV_CHECK(o.samples > 0, "--samples must be positive, got {}", o.samples);
  MKV_CHECK(o.samples <= kMaxRulerSamples, "--samples {} is above the limit of {} per task (RULER uses 500)", o.samples,
            kMaxRulerSamples);
  c.seed = o.seed;
  for (const auto& f : o.common.data) c.data_files.emplace_back(f);
  if (c.data_files.empty()) {
    const std::string essay = o.essay.empty() ? find_shared_asset("text/frankenstein.txt") : o.essay;
    MKV_CHECK(!essay.empty(), "no --essay given and ../shared/assets/text/frankenstein.txt was not found");
    MKV_CHECK(std::filesystem::exists(essay), "--essay: '{}' does not exist", essay);
    c.essays.emplace_back(essay);
  }
  LoadedModel m = fill_run_config(o.common, c);
  const auto summary = eval::run_ruler_eval(*m.transformer, *m.tokenizer, c, std::cerr);
  for (const auto& dir : summary.run_dirs) {
    if (std::filesystem::exists(dir / "summary.csv")) {
      fmt::print("{}\n{}", dir.string(), read_text_file(dir / "summary.csv"));
    }
  }
  if (summary.stopped_early)
    fmt::print(stderr, "stopped after {} new predictions (--max-samples); run again to resume\n", summary.predicted);
  return 0;
}

int run_eval_longbench(const EvalLongBenchOptions& o) {
  eval::LongBenchEvalConfig c;
  MKV_CHECK(o.common.data.size() == 1, "--data: give one folder of {{dataset}}.jsonl files or one .jsonl file");
  c.data = o.common.data.front();
  MKV_CHECK(!o.dataset2prompt.empty(), "--dataset2prompt FILE is required (LongBench config/dataset2prompt.json)");
  MKV_CHECK(!o.dataset2maxlen.empty(), "--dataset2maxlen FILE is required (LongBench config/dataset2maxlen.json)");
  c.dataset2prompt = o.dataset2prompt;
  c.dataset2maxlen = o.dataset2maxlen;
  c.datasets = split_list(o.datasets);
  MKV_CHECK(o.max_length >= 0, "--max-length must be positive, got {}", o.max_length);
  c.max_length = o.max_length;
  LoadedModel m = fill_run_config(o.common, c);
  const auto summary = eval::run_longbench_eval(*m.transformer, *m.tokenizer, c, std::cerr);
  for (std::size_t i = 0; i < summary.run_dirs.size(); ++i) {
    fmt::print("{}\n", summary.run_dirs[i].string());
    for (const auto& [dataset, score] : summary.scores[i]) fmt::print("  {}: {:.2f}\n", dataset, score);
  }
  if (summary.stopped_early)
    fmt::print(stderr, "stopped after {} new predictions (--max-samples); run again to resume\n", summary.predicted);
  return 0;
}

}  // namespace mkv::cli
