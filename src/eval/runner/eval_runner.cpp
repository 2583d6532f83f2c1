#include "eval/runner/eval_runner.h"

#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "core/error.h"
#include "core/progress.h"

namespace mkv::eval {
namespace fs = std::filesystem;

std::optional<ChatTemplate> eval_chat_template(const std::string& choice, const Tokenizer& tokenizer) {
  if (choice == "none") return std::nullopt;
  if (choice == "auto") {
    if (tokenizer.vocab().chat_template.empty()) return std::nullopt;
    return ChatTemplate::for_vocab(tokenizer.vocab());
  }
  return ChatTemplate::by_name(choice);
}

void split_at_question(const std::string& prompt, std::string_view question_head, const Tokenizer& tokenizer,
                       const std::string& sample, GenerationRequest& request) {
  const std::size_t at = question_head.empty() ? std::string::npos : prompt.rfind(question_head);
  MKV_CHECK(at != std::string::npos && at > 0, "{}: the question was not found after a context in the prompt "
            "(--protocol kvpress)", sample);
  request.context = tokenizer.encode(prompt.substr(0, at), true, true);
  request.question = tokenizer.encode(prompt.substr(at), false, true);
}

void write_text_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  MKV_CHECK(out.good(), "cannot write '{}'", path.string());
  out << text;
  MKV_CHECK(out.good(), "cannot write '{}'", path.string());
}

EvalRunSummary run_evaluation(Transformer& model, const Tokenizer& tokenizer, const EvalRunConfig& config,
                              const EvalBenchmark& benchmark, std::ostream& log) {
  MKV_CHECK(!config.settings.empty(), "no press to run");
  MKV_CHECK(!config.output_dir.empty(), "-o DIR is required");
  const std::vector<EvalTask>& tasks = benchmark.tasks();

  // One run per setting: its folder, run.json and a results store per task.
  struct Run {
    fs::path dir;
    std::vector<std::unique_ptr<ResultsStore>> stores;  // (tasks)
  };
  std::vector<Run> runs;
  EvalRunSummary summary;
  int64_t total = 0, already = 0;
  for (const PressSetting& setting : config.settings) {
    std::string name = setting.label;
    if (config.shard.count > 1) name += fmt::format("_shard{}of{}", config.shard.shard, config.shard.count);
    Run run{benchmark.run_dir(config.output_dir / name), {}};
    fs::create_directories(run.dir);
    nlohmann::ordered_json meta = {{"model", config.model_name},
                                   {"press", setting.spec},
                                   {"budget", setting.budget},
                                   {"protocol", protocol_name(config.protocol)},
                                   {"benchmark", benchmark.name()}};
    benchmark.add_run_fields(meta);
    meta["shard"] = fmt::format("{}/{}", config.shard.shard, config.shard.count);
    write_text_file(run.dir / "run.json", meta.dump(1) + "\n");
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const fs::path path = benchmark.predictions_path(run.dir, tasks[t]);
      fs::create_directories(path.parent_path());
      run.stores.push_back(std::make_unique<ResultsStore>(path, log));
      benchmark.check_stored(*run.stores.back(), t);
      for (int64_t index : tasks[t].indices)
        if (config.shard.selects(index)) ++total, already += run.stores.back()->done(index);
    }
    summary.run_dirs.push_back(run.dir);
    runs.push_back(std::move(run));
  }

  ProgressBar bar(benchmark.name(), total, already);
  for (std::size_t r = 0; r < runs.size() && !summary.stopped_early; ++r) {
    for (std::size_t t = 0; t < tasks.size() && !summary.stopped_early; ++t) {
      ResultsStore& store = *runs[r].stores[t];
      for (std::size_t i = 0; i < tasks[t].indices.size(); ++i) {
        const int64_t index = tasks[t].indices[i];
        if (!config.shard.selects(index) || store.done(index)) continue;
        if (config.max_samples >= 0 && summary.predicted >= config.max_samples) {
          summary.stopped_early = true;
          break;
        }
        PreparedSample sample = benchmark.prepare(t, i);
        const GenerationResult g =
            generate_greedy(model, tokenizer, config.settings[r], sample.request, config.session);
        sample.row["pred"] = g.text;
        benchmark.complete(sample.row, g, sample.request);
        store.append(sample.row);
        ++summary.predicted;
        bar.advance();
      }
    }
  }
  bar.finish();

  for (const Run& run : runs) {
    std::vector<const ResultsStore*> stores;
    for (const auto& store : run.stores) stores.push_back(store.get());
    summary.scores.push_back(benchmark.score(run.dir, stores));
  }
  return summary;
}

}  // namespace mkv::eval
