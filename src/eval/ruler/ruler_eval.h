// momentkv eval ruler: RULER samples (generated with the model's tokenizer, or read from RULER
// jsonl files) run with greedy generation for every press × budget, in RULER's layout:
//   OUT/data/{task}/validation.jsonl                       (generated samples)
//   OUT/{press}_L{budget}[_shard{i}of{n}]/run.json         {model, press, budget, protocol, ...}
//   OUT/{...}/pred/{task}.jsonl  rows {index, pred, input, outputs, others, truncation, length}
//   OUT/{...}/summary.csv        Tasks / Score / Nulls (RULER's evaluate.py)
// Predictions are appended per sample (ResultsStore): a killed run resumes where it stopped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "eval/results_store.h"
#include "eval/ruler/ruler_sample.h"
#include "eval/runner/generation.h"
#include "eval/runner/eval_runner.h"
#include "eval/runner/run_config.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace mkv::eval {

struct RulerEvalConfig : EvalRunConfig {
  // Generated data (used when data_files is empty).
  std::vector<std::string> tasks;
  int64_t length = 4096;
  int64_t samples = 25;
  uint64_t seed = 42;
  std::vector<std::filesystem::path> essays;
  // Existing RULER files: task name = the parent folder for ".../{task}/validation.jsonl", else the
  // file stem (e.g. ruler_4096_niah_multikey_3).
  std::vector<std::filesystem::path> data_files;
};

using RulerEvalSummary = EvalRunSummary;

// `input` split for kvpress's protocol: [0, question_start) is context, the rest the question
// (the last line of the task prompt, as RULER's templates put it). npos when there is no newline.
std::size_t ruler_question_start(const std::string& input);

RulerEvalSummary run_ruler_eval(Transformer& model, const Tokenizer& tokenizer, const RulerEvalConfig& config,
                                std::ostream& log);

}  // namespace mkv::eval
