// The one evaluation loop RULER and LongBench plug into. For every press setting it keeps a run
// folder with run.json (model, press, budget, protocol, benchmark, shard, and how the model ran)
// and one predictions file per task (a ResultsStore: appended per sample, resumed after a kill),
// runs this shard's samples that are not done yet through greedy generation
// (eval/runner/generation.h), stops after --max-samples, shows progress, and finally has the
// benchmark score every run whose samples are all done, from the rows on disk. A run folder holds
// one configuration: resuming it with another (a different model, press, context, ...) is an
// error, so that one predictions file never mixes two runs; an unfinished run has no score file. A benchmark supplies its tasks, the prompt and stored row of each sample, and its scoring.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/results_store.h"
#include "eval/runner/run_config.h"
#include "model/transformer.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace mkv::eval {

// One task of a benchmark (a RULER task, a LongBench dataset) and its sample indices, in order.
struct EvalTask {
  std::string name;
  std::vector<int64_t> indices;
};

// A sample ready to run: the generation request and the row stored with its prediction. The row
// holds a "pred" field (its place in the row); the runner writes the generated text into it.
struct PreparedSample {
  GenerationRequest request;
  nlohmann::ordered_json row;
};

class EvalBenchmark {
 public:
  virtual ~EvalBenchmark() = default;
  virtual const char* name() const = 0;  // run.json's "benchmark"
  virtual const std::vector<EvalTask>& tasks() const = 0;
  // The folder of one run given its setting folder OUT/{label}[_shard{i}of{n}].
  virtual std::filesystem::path run_dir(const std::filesystem::path& setting_dir) const { return setting_dir; }
  // The predictions file of `task` inside a run folder.
  virtual std::filesystem::path predictions_path(const std::filesystem::path& run_dir, const EvalTask& task) const = 0;
  // Fields of run.json beyond the common ones.
  virtual void add_run_fields(nlohmann::ordered_json& run) const {}
  // Checks the rows a resumed predictions file holds (MkvError naming the file and line).
  virtual void check_stored(const ResultsStore& store, std::size_t task) const = 0;
  // Builds sample `sample` (its position in tasks()[task].indices); MkvError for a bad sample.
  virtual PreparedSample prepare(std::size_t task, std::size_t sample) const = 0;
  // Fills fields of a row that need the generation's result (after "pred").
  virtual void complete(nlohmann::ordered_json& row, const GenerationResult& result,
                        const GenerationRequest& request) const {}
  // The file score() writes into a run folder (report reads it; a run without it is unfinished).
  virtual const char* score_file() const = 0;
  // Scores a finished run from every stored prediction (stores[t] holds tasks()[t]'s) and writes
  // score_file() into run_dir; returns task → score.
  virtual std::map<std::string, double> score(const std::filesystem::path& run_dir,
                                              const std::vector<const ResultsStore*>& stores) const = 0;
};

struct EvalRunSummary {
  int64_t predicted = 0;  // new predictions made by this call
  bool stopped_early = false;
  std::vector<std::filesystem::path> run_dirs;          // per setting
  std::vector<std::map<std::string, double>> scores;   // per setting: task → score (empty: unfinished)
};

EvalRunSummary run_evaluation(Transformer& model, const Tokenizer& tokenizer, const EvalRunConfig& config,
                              const EvalBenchmark& benchmark, std::ostream& log);

// The chat template a run wraps prompts in: "auto" (the model's, none when it has none), "none",
// or a named one.
std::optional<ChatTemplate> eval_chat_template(const std::string& choice, const Tokenizer& tokenizer);

// kvpress's protocol: the prompt's text before the last occurrence of `question_head` is the
// context (compressed), the rest the question (fed after compression). MkvError naming `sample`
// when the question is not found after some context.
void split_at_question(const std::string& prompt, std::string_view question_head, const Tokenizer& tokenizer,
                       const std::string& sample, GenerationRequest& request);

}  // namespace mkv::eval
