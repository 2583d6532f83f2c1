// The common result format every evaluation reduces to, and merging of result folders.
//
// A record is one score of one task for one (model, press, budget):
//   {"model": "...", "press": "snapkv", "budget": 256, "task": "niah_single_1", "score": 93.4, "n": 500}
// budget is tokens per KV head; 0 means the full cache (no compression). score is on the
// benchmark's 0–100 scale; n is the number of samples (0 if unknown).
//
// A result folder is read as, in order of preference:
//   scores.jsonl            rows in the common format (what momentkv writes), or
//   run.json                {"model", "press", "budget"} describing the run, plus
//     summary.csv           RULER's evaluate.py output (rows Tasks, Score, Nulls "k/N"), and/or
//     result.json           LongBench's eval.py output {dataset: score}; n = lines of
//                           {dataset}.jsonl beside it when present.
// Merging sums shards: records with the same (model, press, budget, task) are combined: RULER runs
// read with their predictions are scored again over the union of their samples in index order
// (exactly the unsharded score); others into the n-weighted mean (all must have n > 0).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mkv::eval::report {

struct ResultRecord {
  std::string model;
  std::string press;
  int64_t budget = 0;
  std::string task;
  double score = 0;
  int64_t n = 0;
  // (sample index, metric value in [0, 1]) of a RULER or LongBench run read with its predictions
  // (pred/{task}.jsonl beside summary.csv, {dataset}.jsonl beside result.json); empty otherwise.
  // Shards that all carry them merge by scoring the union in index order with `rescore`, as the
  // unsharded run scores (ruler_eval, longbench_eval), so the merged score is the unsharded one
  // exactly; otherwise by the n-weighted mean of the rounded scores.
  std::vector<std::pair<int64_t, double>> samples = {};
  double (*rescore)(const std::vector<double>& values) = nullptr;  // the benchmark's rounded mean
};

nlohmann::ordered_json to_json(const ResultRecord& record);
ResultRecord record_from_json(const nlohmann::json& row, const std::string& where);

// Appends records to `folder/scores.jsonl`.
void append_scores(const std::filesystem::path& folder, const std::vector<ResultRecord>& records);

// MkvError naming the file (and line, for scores.jsonl) for unreadable or malformed files, and for
// an unfinished run.
std::vector<ResultRecord> read_result_folder(const std::filesystem::path& folder);

// A run folder whose run has not written its scores yet: run.json without summary.csv,
// result.json or scores.jsonl (an evaluation still running, killed, or stopped by --max-samples
// before its first prediction). `report` skips these with a warning.
bool is_unfinished_run(const std::filesystem::path& folder);
// The run described by folder/run.json (model, press, budget; task "", score 0, n 0); MkvError
// naming the file when it is not a JSON object with those fields.
ResultRecord read_run_json(const std::filesystem::path& folder);

// Reads every folder, then combines duplicates as described above; sorted by model, task, press, budget.
std::vector<ResultRecord> merge_result_folders(const std::vector<std::filesystem::path>& folders);
std::vector<ResultRecord> merge_records(std::vector<ResultRecord> records);

}  // namespace mkv::eval::report
