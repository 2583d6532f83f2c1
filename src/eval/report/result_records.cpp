#include "eval/report/result_records.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/metrics/longbench_metrics.h"
#include "eval/metrics/ruler_metrics.h"

namespace mkv::eval::report {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json read_json_file(const fs::path& path) {
  const std::string text = read_text_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", path.string(), json_error_text(e.what()));
  }
}

// A whole decimal integer; MkvError naming `where` and `what` otherwise.
int64_t parse_count(const std::string& text, const std::string& where, const std::string& what) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  MKV_CHECK(!text.empty() && error == std::errc() && end == text.data() + text.size() && value >= 0,
            "{}: {} '{}' is not a non-negative integer", where, what, text);
  return value;
}

// The per-sample metric values of a RULER task's predictions file (rows {index, pred, outputs}),
// sorted by index; empty when the file is absent. MkvError naming the file and line for a malformed
// row, and when it holds another number of samples than summary.csv counts (`n`).
std::vector<std::pair<int64_t, double>> ruler_samples(const fs::path& path, const std::string& task, int64_t n) {
  if (!fs::exists(path)) return {};
  std::vector<int64_t> indices;
  std::vector<std::string> predictions;
  std::vector<std::vector<std::string>> references;
  const std::string text = read_text_file(path);
  for (const TextLine& line : split_lines(text)) {
    if (is_blank(line.text)) continue;
    const std::string where = fmt::format("{}:{}", path.string(), line.number);
    json row;
    try {
      row = json::parse(line.text);
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", where, json_error_text(e.what()));
    }
    MKV_CHECK(row.is_object() && row.contains("index") && row["index"].is_number_integer() && row.contains("pred") &&
                  row["pred"].is_string() && row.contains("outputs") && row["outputs"].is_array(),
              "{}: a RULER prediction row needs an integer index, a string pred and an outputs list", where);
    for (const json& output : row["outputs"])
      MKV_CHECK(output.is_string(), "{}: outputs must be strings", where);
    indices.push_back(row["index"].get<int64_t>());
    predictions.push_back(row["pred"].get<std::string>());
    references.push_back(row["outputs"].get<std::vector<std::string>>());
  }
  MKV_CHECK(int64_t(indices.size()) == n, "{}: {} predictions, but summary.csv counts {} samples of task '{}'",
            path.string(), indices.size(), n, task);
  const std::vector<double> values = ruler_sample_scores(task, predictions, references).values;
  std::vector<std::pair<int64_t, double>> samples;
  for (std::size_t i = 0; i < values.size(); ++i) samples.emplace_back(indices[i], values[i]);
  std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return samples;
}

// The per-sample scores of a LongBench dataset's predictions file (rows {pred, answers,
// all_classes, index}), sorted by index; empty when the rows carry no index (LongBench's own
// eval.py output, whose shards cannot be told apart: those merge by the weighted mean). MkvError
// naming the file and line for a row that is no JSON object or lacks the other fields.
std::vector<std::pair<int64_t, double>> longbench_samples(const fs::path& path, const std::string& dataset) {
  std::vector<std::pair<int64_t, double>> samples;
  const std::string text = read_text_file(path);
  for (const TextLine& line : split_lines(text)) {
    if (is_blank(line.text)) continue;
    const std::string where = fmt::format("{}:{}", path.string(), line.number);
    json row;
    try {
      row = json::parse(line.text);
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", where, json_error_text(e.what()));
    }
    MKV_CHECK(row.is_object(), "{}: a LongBench prediction row must be a JSON object", where);
    if (!row.contains("index")) return {};
    const auto strings = [&](const char* key) {
      MKV_CHECK(row.contains(key) && row[key].is_array() &&
                    std::all_of(row[key].begin(), row[key].end(), [](const json& s) { return s.is_string(); }),
                "{}: a LongBench prediction row needs '{}', a list of strings", where, key);
      return row[key].get<std::vector<std::string>>();
    };
    MKV_CHECK(row["index"].is_number_integer() && row.contains("pred") && row["pred"].is_string(),
              "{}: a LongBench prediction row needs an integer index and a string pred", where);
    const LongBenchPrediction prediction{row["pred"].get<std::string>(), strings("answers"), strings("all_classes"),
                                         0};
    samples.emplace_back(row["index"].get<int64_t>(), longbench_sample_score(dataset, prediction));
  }
  std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return samples;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') cell.push_back('"'), ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.push_back(std::move(cell)), cell.clear();
    else if (c != '\r') cell.push_back(c);
  }
  cells.push_back(std::move(cell));
  return cells;
}

int64_t count_lines(const fs::path& path) {
  int64_t lines = 0;
  const std::string text = read_text_file(path);
  for (const TextLine& line : split_lines(text))
    if (!line.text.empty()) ++lines;
  return lines;
}

std::vector<ResultRecord> read_ruler_summary(const fs::path& path, const ResultRecord& run) {
  const std::string text = read_text_file(path);
  std::map<std::string, std::vector<std::string>> rows;  // first cell -> the other cells
  for (const TextLine& line : split_lines(text)) {
    std::vector<std::string> cells = split_csv_line(std::string(line.text));
    const std::string key = cells.front();
    rows[key] = std::vector<std::string>(cells.begin() + 1, cells.end());
  }
  for (const char* key : {"Tasks", "Score", "Nulls"})
    MKV_CHECK(rows.count(key), "{}: no '{}' row (RULER summary.csv has Tasks, Score, Nulls)", path.string(), key);
  const auto& tasks = rows["Tasks"];
  MKV_CHECK(rows["Score"].size() == tasks.size() && rows["Nulls"].size() == tasks.size(),
            "{}: the Tasks, Score and Nulls rows differ in length", path.string());
  std::vector<ResultRecord> records;
  for (size_t i = 0; i < tasks.size(); ++i) {
    ResultRecord record = run;
    record.task = tasks[i];
    const std::string& score = rows["Score"][i];
    size_t used = 0;
    try {
      record.score = std::stod(score, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MKV_CHECK(used > 0 && used == score.size() && std::isfinite(record.score),
              "{}: score '{}' of task '{}' is not a number", path.string(), score, tasks[i]);
    const std::string& nulls = rows["Nulls"][i];  // "k/N"
    const size_t slash = nulls.find('/');
    MKV_CHECK(slash != std::string::npos, "{}: Nulls '{}' of task '{}' is not k/N", path.string(), nulls, tasks[i]);
    record.n = parse_count(nulls.substr(slash + 1), path.string(), fmt::format("the sample count of task '{}'", tasks[i]));
    record.samples = ruler_samples(path.parent_path() / "pred" / (tasks[i] + ".jsonl"), tasks[i], record.n);
    record.rescore = ruler_mean_score;
    records.push_back(record);
  }
  return records;
}

std::vector<ResultRecord> read_longbench_result(const fs::path& path, const ResultRecord& run) {
  const json scores = read_json_file(path);
  MKV_CHECK(scores.is_object(), "{}: LongBench result.json must map dataset to score", path.string());
  std::vector<ResultRecord> records;
  for (const auto& [dataset, score] : scores.items()) {
    MKV_CHECK(score.is_number(), "{}: score of '{}' is not a number (LongBench-E buckets are not merged)",
              path.string(), dataset);
    ResultRecord record = run;
    record.task = dataset;
    record.score = score.get<double>();
    const fs::path predictions = path.parent_path() / (dataset + ".jsonl");
    record.n = fs::exists(predictions) ? count_lines(predictions) : 0;
    if (record.n > 0) {
      record.samples = longbench_samples(predictions, dataset);
      record.rescore = longbench_mean_score;
    }
    records.push_back(record);
  }
  return records;
}

}  // namespace

nlohmann::ordered_json to_json(const ResultRecord& record) {
  nlohmann::ordered_json row;
  row["model"] = record.model;
  row["press"] = record.press;
  row["budget"] = record.budget;
  row["task"] = record.task;
  row["score"] = record.score;
  row["n"] = record.n;
  return row;
}

ResultRecord record_from_json(const json& row, const std::string& where) {
  MKV_CHECK(row.is_object(), "{}: a result record must be a JSON object", where);
  const auto field = [&](const char* name) -> const json& {
    MKV_CHECK(row.contains(name), "{}: missing field '{}'", where, name);
    return row[name];
  };
  ResultRecord record;
  MKV_CHECK(field("model").is_string() && field("press").is_string() && field("task").is_string(),
            "{}: model, press and task must be strings", where);
  MKV_CHECK(field("budget").is_number_integer() && field("n").is_number_integer() && field("score").is_number(),
            "{}: budget and n must be integers and score a number", where);
  record.model = row["model"];
  record.press = row["press"];
  record.task = row["task"];
  record.budget = row["budget"];
  record.n = row["n"];
  record.score = row["score"];
  return record;
}

void append_scores(const fs::path& folder, const std::vector<ResultRecord>& records) {
  fs::create_directories(folder);
  std::string lines;
  for (const auto& record : records) lines += to_json(record).dump() + '\n';
  append_text_file(folder / "scores.jsonl", lines);
}

ResultRecord read_run_json(const fs::path& folder) {
  json run_json = read_json_file(folder / "run.json");
  MKV_CHECK(run_json.is_object(), "{}: run.json must be a JSON object (model, press, budget)",
            (folder / "run.json").string());
  run_json["task"] = "";
  run_json["score"] = 0;
  run_json["n"] = 0;
  return record_from_json(run_json, (folder / "run.json").string());
}

bool is_unfinished_run(const fs::path& folder) {
  return !fs::exists(folder / "scores.jsonl") && fs::exists(folder / "run.json") && !fs::exists(folder / "summary.csv") &&
         !fs::exists(folder / "result.json");
}

std::vector<ResultRecord> read_result_folder(const fs::path& folder) {
  MKV_CHECK(fs::is_directory(folder), "result folder {} does not exist", folder.string());
  std::vector<ResultRecord> records;
  if (fs::exists(folder / "scores.jsonl")) {
    const std::string text = read_text_file(folder / "scores.jsonl");
    for (const TextLine& line : split_lines(text)) {
      if (is_blank(line.text)) continue;
      const std::string where = fmt::format("{}:{}", (folder / "scores.jsonl").string(), line.number);
      json row;
      try {
        row = json::parse(line.text);
      } catch (const json::exception& e) {
        fail("{}: not valid JSON ({})", where, json_error_text(e.what()));
      }
      records.push_back(record_from_json(row, where));
    }
    return records;
  }
  MKV_CHECK(fs::exists(folder / "run.json"),
            "{} has neither scores.jsonl nor run.json (model, press, budget) beside RULER/LongBench results",
            folder.string());
  const ResultRecord run = read_run_json(folder);
  MKV_CHECK(!is_unfinished_run(folder), "{} has run.json but no summary.csv or result.json (an unfinished run)",
            folder.string());
  const bool has_summary = fs::exists(folder / "summary.csv"), has_result = fs::exists(folder / "result.json");
  if (has_summary) records = read_ruler_summary(folder / "summary.csv", run);
  if (has_result) {
    auto longbench = read_longbench_result(folder / "result.json", run);
    records.insert(records.end(), longbench.begin(), longbench.end());
  }
  return records;
}

std::vector<ResultRecord> merge_records(std::vector<ResultRecord> records) {
  const auto key = [](const ResultRecord& r) { return std::tie(r.model, r.task, r.press, r.budget); };
  std::stable_sort(records.begin(), records.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  std::vector<ResultRecord> merged;
  std::vector<bool> combined;  // (merged) whether a record of another shard was added to it
  for (const ResultRecord& record : records) {
    if (merged.empty() || key(merged.back()) != key(record)) {
      merged.push_back(record);
      combined.push_back(false);
      continue;
    }
    ResultRecord& total = merged.back();
    MKV_CHECK(total.n > 0 && record.n > 0,
              "cannot merge two results for {} / {} / budget {} / {} without their sample counts", record.model,
              record.press, record.budget, record.task);
    total.score = (total.score * static_cast<double>(total.n) + record.score * static_cast<double>(record.n)) /
                  static_cast<double>(total.n + record.n);
    total.n += record.n;
    combined.back() = true;
    if (total.samples.empty() || record.samples.empty() || total.rescore != record.rescore) {
      total.samples.clear();  // a shard without its predictions: the weighted mean it is
    } else {
      total.samples.insert(total.samples.end(), record.samples.begin(), record.samples.end());
    }
  }
  for (std::size_t i = 0; i < merged.size(); ++i) {
    ResultRecord& r = merged[i];
    if (!combined[i] || r.samples.empty() || !r.rescore) continue;
    std::stable_sort(r.samples.begin(), r.samples.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t j = 1; j < r.samples.size(); ++j)
      MKV_CHECK(r.samples[j].first != r.samples[j - 1].first,
                "cannot merge results for {} / {} / budget {} / {}: sample {} is in two of them (overlapping shards)",
                r.model, r.press, r.budget, r.task, r.samples[j].first);
    std::vector<double> values;
    for (const auto& [index, value] : r.samples) values.push_back(value);
    r.score = r.rescore(values);
  }
  return merged;
}

std::vector<ResultRecord> merge_result_folders(const std::vector<fs::path>& folders) {
  std::vector<ResultRecord> records;
  for (const auto& folder : folders) {
    auto more = read_result_folder(folder);
    records.insert(records.end(), more.begin(), more.end());
  }
  return merge_records(std::move(records));
}

}  // namespace mkv::eval::report
