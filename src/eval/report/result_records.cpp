#include "eval/report/result_records.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.h"

namespace mkv::eval::report {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  MKV_CHECK(in.good(), "cannot read {}", path.string());
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    fail("{}: not valid JSON ({})", path.string(), e.what());
  }
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
  std::ifstream in(path, std::ios::binary);
  int64_t lines = 0;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ++lines;
  return lines;
}

std::vector<ResultRecord> read_ruler_summary(const fs::path& path, const ResultRecord& run) {
  std::ifstream in(path, std::ios::binary);
  MKV_CHECK(in.good(), "cannot read {}", path.string());
  std::map<std::string, std::vector<std::string>> rows;  // first cell -> the other cells
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells = split_csv_line(line);
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
    try {
      record.score = std::stod(rows["Score"][i]);
    } catch (const std::exception&) {
      fail("{}: score '{}' of task '{}' is not a number", path.string(), rows["Score"][i], tasks[i]);
    }
    const std::string& nulls = rows["Nulls"][i];  // "k/N"
    const size_t slash = nulls.find('/');
    MKV_CHECK(slash != std::string::npos, "{}: Nulls '{}' of task '{}' is not k/N", path.string(), nulls, tasks[i]);
    record.n = std::stoll(nulls.substr(slash + 1));
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
  std::ofstream out(folder / "scores.jsonl", std::ios::binary | std::ios::app);
  MKV_CHECK(out.good(), "cannot write {}", (folder / "scores.jsonl").string());
  for (const auto& record : records) out << to_json(record).dump() << '\n';
}

std::vector<ResultRecord> read_result_folder(const fs::path& folder) {
  MKV_CHECK(fs::is_directory(folder), "result folder {} does not exist", folder.string());
  std::vector<ResultRecord> records;
  if (fs::exists(folder / "scores.jsonl")) {
    std::ifstream in(folder / "scores.jsonl", std::ios::binary);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty()) continue;
      const std::string where = fmt::format("{}:{}", (folder / "scores.jsonl").string(), number);
      json row;
      try {
        row = json::parse(line);
      } catch (const json::parse_error& e) {
        fail("{}: not valid JSON ({})", where, e.what());
      }
      records.push_back(record_from_json(row, where));
    }
    return records;
  }
  MKV_CHECK(fs::exists(folder / "run.json"),
            "{} has neither scores.jsonl nor run.json (model, press, budget) beside RULER/LongBench results",
            folder.string());
  json run_json = read_json_file(folder / "run.json");
  run_json["task"] = "";
  run_json["score"] = 0;
  run_json["n"] = 0;
  const ResultRecord run = record_from_json(run_json, (folder / "run.json").string());
  const bool has_summary = fs::exists(folder / "summary.csv"), has_result = fs::exists(folder / "result.json");
  MKV_CHECK(has_summary || has_result, "{} has run.json but no summary.csv or result.json", folder.string());
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
  for (const ResultRecord& record : records) {
    if (merged.empty() || key(merged.back()) != key(record)) {
      merged.push_back(record);
      continue;
    }
    ResultRecord& total = merged.back();
    MKV_CHECK(total.n > 0 && record.n > 0,
              "cannot merge two results for {} / {} / budget {} / {} without their sample counts", record.model,
              record.press, record.budget, record.task);
    total.score = (total.score * static_cast<double>(total.n) + record.score * static_cast<double>(record.n)) /
                  static_cast<double>(total.n + record.n);
    total.n += record.n;
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
