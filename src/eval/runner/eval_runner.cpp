#include "eval/runner/eval_runner.h"

#include <fmt/format.h>

#include <memory>

#include "core/error.h"
#include "core/progress.h"
#include "core/text_file.h"
#include "ops/matmul_int8.h"

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

namespace {

// run.json of one setting: what decides its predictions.
nlohmann::ordered_json run_fields(const EvalRunConfig& config, const PressSetting& setting,
                                  const EvalBenchmark& benchmark) {
  nlohmann::ordered_json meta = {{"model", config.model_name},
                                 {"press", setting.spec},
                                 {"budget", setting.budget},
                                 {"protocol", protocol_name(config.protocol)},
                                 {"benchmark", benchmark.name()},
                                 {"chat_template", config.chat_template},
                                 {"ctx", config.session.n_ctx},
                                 {"cache_type", kv_storage_name(config.session.kv_storage)},
                                 {"precision", matmul_precision() == MatmulPrecision::Fast ? "fast" : "exact"},
                                 {"compress_chunks", config.session.compress_each_chunk}};
  benchmark.add_run_fields(meta);
  meta["shard"] = fmt::format("{}/{}", config.shard.shard, config.shard.count);
  return meta;
}

// A run folder that already holds a run.json is resumed only by the same configuration: fields
// that differ (those both files have; older files lack some) would mix two runs' predictions.
void require_same_run(const fs::path& path, const nlohmann::ordered_json& meta) {
  if (!fs::exists(path)) return;
  nlohmann::ordered_json stored;
  try {
    stored = nlohmann::ordered_json::parse(read_text_file(path, "run.json"));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({}); delete the folder to start the run over", path.string(), json_error_text(e.what()));
  }
  MKV_CHECK(stored.is_object(), "{}: not a JSON object; delete the folder to start the run over", path.string());
  for (const auto& [key, value] : meta.items()) {
    const auto it = stored.find(key);
    if (it == stored.end() || *it == value) continue;
    fail("{} belongs to another run ({} {} there, {} now): resuming it would mix the two runs' predictions; give "
         "another -o folder, or delete this one to start over",
         path.parent_path().string(), key, it->is_primitive() ? it->dump() : it->type_name(), value.dump());
  }
}

}  // namespace

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
    const nlohmann::ordered_json meta = run_fields(config, setting, benchmark);
    require_same_run(run.dir / "run.json", meta);
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
    bool finished = true;
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      stores.push_back(run.stores[t].get());
      for (int64_t index : tasks[t].indices) finished = finished && (!config.shard.selects(index) || stores[t]->done(index));
    }
    if (finished) {
      summary.scores.push_back(benchmark.score(run.dir, stores));
    } else {  // a score file from before would describe other predictions
      fs::remove(run.dir / benchmark.score_file());
      summary.scores.emplace_back();
    }
  }
  return summary;
}

}  // namespace mkv::eval
