// momentkv eval longbench: LongBench v1 (THUDM/LongBench pred.py + eval.py) with presses.
// Prompt templates and generation lengths come from the user's dataset2prompt.json and
// dataset2maxlen.json; the tokenised prompt is middle-truncated to max_length (first half + last
// half, before the chat template); no chat template for trec, triviaqa, samsum, lsht, lcc,
// repobench-p; samsum also stops at "\n". Output per press × budget:
//   OUT/{press}_L{budget}[_shard{i}of{n}]/pred/{model}/{dataset}.jsonl  {pred, answers, all_classes, length, index, _id}
//   OUT/{...}/pred/{model}/result.json  {dataset: score}   and run.json beside it (for `momentkv report`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "eval/results_store.h"
#include "eval/runner/generation.h"
#include "eval/runner/eval_runner.h"
#include "eval/runner/run_config.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace mkv::eval {

struct LongBenchRow {
  int64_t index = 0;  // line order in the file (0-based, blank lines skipped)
  std::string input, context, id;
  std::vector<std::string> answers, all_classes;
  int64_t length = 0;
  std::string dataset;
};

// Reads LongBench rows; errors name the file, the line and the field.
std::vector<LongBenchRow> read_longbench_jsonl(const std::filesystem::path& path);

// Python str.format with named fields {context} {input} (and {{ }}); MkvError for other fields.
std::string format_longbench_prompt(const std::string& templ, const LongBenchRow& row, const std::string& dataset);

// LongBench's pred.py datasets that skip the chat template.
bool longbench_skips_chat_template(const std::string& dataset);

struct LongBenchEvalConfig : EvalRunConfig {
  std::filesystem::path data;           // a folder of {dataset}.jsonl or one .jsonl file
  std::filesystem::path dataset2prompt;
  std::filesystem::path dataset2maxlen;
  std::vector<std::string> datasets;    // empty: every dataset found (folder) / the file's
  int64_t max_length = 0;               // prompt tokens after truncation; 0 = context − generation length
};

using LongBenchEvalSummary = EvalRunSummary;  // run_dirs: the pred/{model} folders

LongBenchEvalSummary run_longbench_eval(Transformer& model, const Tokenizer& tokenizer,
                                        const LongBenchEvalConfig& config, std::ostream& log);

}  // namespace mkv::eval
