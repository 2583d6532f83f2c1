#include "eval/longbench/longbench_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <ostream>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/runner/eval_runner.h"
#include "eval/metrics/longbench_metrics.h"
#include "text/chat_template.h"

namespace mkv::eval {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& path, const std::string& flag) {
  const std::string text = read_text_file(path, flag);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: {}: not valid JSON ({})", flag, path.string(), json_error_text(e.what()));
  }
}

std::vector<std::string> string_list(const json& value, const std::string& where, const std::string& field,
                                     bool null_ok) {
  if (value.is_null() && null_ok) return {};
  MKV_CHECK(value.is_array(), "{}: field '{}' must be a list of strings", where, field);
  std::vector<std::string> out;
  for (const auto& v : value) {
    MKV_CHECK(v.is_string(), "{}: field '{}' must be a list of strings", where, field);
    out.push_back(v.get<std::string>());
  }
  return out;
}

// A resumed predictions file must hold rows of these data rows only (index = row position), with
// the fields scoring reads.
void check_stored_rows(const ResultsStore& store, const std::string& dataset, const std::vector<LongBenchRow>& rows) {
  std::set<int64_t> indices;
  for (const auto& row : rows) indices.insert(row.index);
  store.require_indices_in(indices, fmt::format("the {} rows of dataset {}", rows.size(), dataset));
  store.require_field("pred", "string");
  store.require_field("answers", "array of strings");
  store.require_field("all_classes", "array of strings");
  store.require_field("length", "integer");
}

}  // namespace

std::vector<LongBenchRow> read_longbench_jsonl(const fs::path& path) {
  const std::string content = read_text_file(path, "LongBench file");
  std::vector<LongBenchRow> rows;
  for (const TextLine& l : split_lines(content)) {
    if (is_blank(l.text)) continue;
    const std::string where = fmt::format("{}:{}", path.string(), l.number);
    json j;
    try {
      j = json::parse(l.text);
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", where, json_error_text(e.what()));
    }
    MKV_CHECK(j.is_object(), "{}: a LongBench row must be a JSON object", where);
    LongBenchRow row;
    row.index = static_cast<int64_t>(rows.size());
    for (const char* field : {"input", "context"}) {
      MKV_CHECK(j.contains(field) && j[field].is_string(), "{}: field '{}' missing or not a string", where, field);
    }
    row.input = j["input"];
    row.context = j["context"];
    MKV_CHECK(j.contains("answers"), "{}: field 'answers' missing", where);
    row.answers = string_list(j["answers"], where, "answers", false);
    if (j.contains("all_classes")) row.all_classes = string_list(j["all_classes"], where, "all_classes", true);
    if (j.contains("length")) {
      MKV_CHECK(j["length"].is_number_integer(), "{}: field 'length' must be an integer", where);
      row.length = j["length"];
    }
    if (j.contains("_id") && j["_id"].is_string()) row.id = j["_id"];
    if (j.contains("dataset") && j["dataset"].is_string()) row.dataset = j["dataset"];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string format_longbench_prompt(const std::string& templ, const LongBenchRow& row, const std::string& dataset) {
  std::string out;
  for (std::size_t i = 0; i < templ.size(); ++i) {
    const char c = templ[i];
    if (c == '{' && i + 1 < templ.size() && templ[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < templ.size() && templ[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const std::size_t close = templ.find('}', i);
      MKV_CHECK(close != std::string::npos, "dataset2prompt[{}]: unmatched '{{' in the template", dataset);
      const std::string name = templ.substr(i + 1, close - i - 1);
      if (name == "context") out += row.context;
      else if (name == "input") out += row.input;
      else fail("dataset2prompt[{}]: unknown template field '{{{}}}' (rows give context and input)", dataset, name);
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

bool longbench_skips_chat_template(const std::string& d) {
  return d == "trec" || d == "triviaqa" || d == "samsum" || d == "lsht" || d == "lcc" || d == "repobench-p";
}

namespace {

// LongBench in the evaluation runner (pred.py + eval.py): rows {pred, answers, all_classes, length,
// index, _id} in OUT/{run}/pred/{model}/{dataset}.jsonl; result.json {dataset: score} beside them.
class LongBenchBenchmark : public EvalBenchmark {
 public:
  LongBenchBenchmark(std::vector<std::pair<std::string, std::vector<LongBenchRow>>> data, const json& prompts,
                     const json& maxlens, const LongBenchEvalConfig& config, int64_t context_length,
                     const std::optional<ChatTemplate>& chat, const Tokenizer& tokenizer)
      : data_(std::move(data)), config_(config), chat_(chat), tokenizer_(tokenizer) {
    for (const auto& [dataset, rows] : data_) {
      EvalTask task{dataset, {}};
      for (const LongBenchRow& row : rows) task.indices.push_back(row.index);
      tasks_.push_back(std::move(task));
      templates_.push_back(prompts[dataset].get<std::string>());
      max_gen_.push_back(maxlens[dataset].get<int>());
      max_length_.push_back(config.max_length > 0 ? config.max_length : context_length - max_gen_.back() - 1);
    }
  }
  const char* name() const override { return "longbench"; }
  const std::vector<EvalTask>& tasks() const override { return tasks_; }
  fs::path run_dir(const fs::path& setting_dir) const override { return setting_dir / "pred" / config_.model_name; }
  fs::path predictions_path(const fs::path& run_dir, const EvalTask& task) const override {
    return run_dir / (task.name + ".jsonl");
  }
  void add_run_fields(nlohmann::ordered_json& run) const override { run["max_length"] = config_.max_length; }
  void check_stored(const ResultsStore& store, std::size_t task) const override {
    check_stored_rows(store, data_[task].first, data_[task].second);
  }

  PreparedSample prepare(std::size_t task, std::size_t sample) const override {
    const std::string& dataset = data_[task].first;
    const LongBenchRow& row = data_[task].second[sample];
    const std::string& templ = templates_[task];
    std::string prompt = format_longbench_prompt(templ, row, dataset);
    // Middle truncation on the tokenised prompt (pred.py), before the chat template.
    std::vector<int32_t> ids = tokenizer_.encode(prompt, /*add_special=*/false, /*parse_special=*/false);
    const int64_t max_length = max_length_[task];
    if (static_cast<int64_t>(ids.size()) > max_length) {
      const int64_t half = max_length / 2;
      prompt = tokenizer_.decode(std::span<const int32_t>(ids.data(), half)) +
               tokenizer_.decode(std::span<const int32_t>(ids.data() + ids.size() - half, half));
    }
    const bool templated = chat_ && !longbench_skips_chat_template(dataset);
    const std::string text = templated ? chat_->render({{"user", prompt}}, true) : prompt;
    PreparedSample out;
    out.request.max_new_tokens = max_gen_[task];
    if (dataset == "samsum") out.request.stop_strings.push_back("\n");
    if (config_.protocol == Protocol::kvpress) {
      const std::size_t cpos = templ.find("{context}");
      MKV_CHECK(cpos != std::string::npos, "dataset2prompt[{}]: --protocol kvpress needs a {{context}} field", dataset);
      const std::string question = format_longbench_prompt(templ.substr(cpos + 9), row, dataset);
      split_at_question(text, std::string_view(question).substr(0, 48), tokenizer_,
                        fmt::format("{} row {}", dataset, row.index + 1), out.request);
    } else {
      out.request.context = tokenizer_.encode(text, true, true);
    }
    out.row = {{"pred", ""},         {"answers", row.answers}, {"all_classes", row.all_classes},
               {"length", row.length}, {"index", row.index},    {"_id", row.id}};
    return out;
  }

  const char* score_file() const override { return "result.json"; }
  std::map<std::string, double> score(const fs::path& run_dir, const std::vector<const ResultsStore*>& stores) const override {
    nlohmann::ordered_json result = nlohmann::ordered_json::object();
    std::map<std::string, double> scores;
    for (std::size_t d = 0; d < data_.size(); ++d) {
      const ResultsStore& store = *stores[d];
      if (store.size() == 0) continue;
      std::vector<LongBenchPrediction> preds;
      // In index order (a resumed run's file may not be): the order the report merges shards in.
      std::vector<const nlohmann::json*> rows;
      for (const auto& row : store.rows()) rows.push_back(&row);
      std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
        return a->at("index").get<int64_t>() < b->at("index").get<int64_t>();
      });
      for (const nlohmann::json* row_ptr : rows)
        preds.push_back({row_ptr->at("pred").get<std::string>(), row_ptr->at("answers").get<std::vector<std::string>>(),
                         row_ptr->at("all_classes").get<std::vector<std::string>>(), row_ptr->value("length", int64_t{0})});
      const double score = longbench_dataset_score(data_[d].first, preds);
      result[data_[d].first] = score;
      scores[data_[d].first] = score;
    }
    write_text_file(run_dir / score_file(), result.dump(4) + "\n");
    return scores;
  }

 private:
  std::vector<std::pair<std::string, std::vector<LongBenchRow>>> data_;
  std::vector<EvalTask> tasks_;
  std::vector<std::string> templates_;  // (datasets) dataset2prompt's template
  std::vector<int> max_gen_;            // (datasets) generation length
  std::vector<int64_t> max_length_;     // (datasets) prompt tokens after middle truncation
  const LongBenchEvalConfig& config_;
  std::optional<ChatTemplate> chat_;
  const Tokenizer& tokenizer_;
};

}  // namespace

LongBenchEvalSummary run_longbench_eval(Transformer& model, const Tokenizer& tokenizer,
                                        const LongBenchEvalConfig& config, std::ostream& log) {
  MKV_CHECK(!config.settings.empty(), "no press to run");
  MKV_CHECK(!config.output_dir.empty(), "-o DIR is required");
  MKV_CHECK(fs::exists(config.data), "--data: '{}' does not exist", config.data.string());
  const json prompts = read_json(config.dataset2prompt, "--dataset2prompt");
  const json maxlens = read_json(config.dataset2maxlen, "--dataset2maxlen");
  MKV_CHECK(prompts.is_object(), "--dataset2prompt: '{}' must map dataset to template", config.dataset2prompt.string());
  MKV_CHECK(maxlens.is_object(), "--dataset2maxlen: '{}' must map dataset to a token count", config.dataset2maxlen.string());

  // Datasets and their rows.
  std::vector<std::pair<std::string, std::vector<LongBenchRow>>> data;
  MKV_CHECK(fs::exists(config.data), "--data: '{}' does not exist", config.data.string());
  if (fs::is_directory(config.data)) {
    std::vector<std::string> names = config.datasets;
    if (names.empty()) {
      for (const auto& entry : fs::directory_iterator(config.data))
        if (entry.path().extension() == ".jsonl") names.push_back(entry.path().stem().string());
      std::sort(names.begin(), names.end());
    }
    MKV_CHECK(!names.empty(), "--data: no .jsonl files in '{}'", config.data.string());
    for (const auto& name : names) {
      const fs::path file = config.data / (name + ".jsonl");
      MKV_CHECK(fs::exists(file), "--datasets: '{}' not found in '{}'", name + ".jsonl", config.data.string());
      data.emplace_back(name, read_longbench_jsonl(file));
    }
  } else {
    auto rows = read_longbench_jsonl(config.data);
    std::string name = !rows.empty() && !rows.front().dataset.empty() ? rows.front().dataset : config.data.stem().string();
    if (config.datasets.size() == 1) name = config.datasets.front();
    MKV_CHECK(config.datasets.size() <= 1, "--datasets: a single --data file holds one dataset");
    data.emplace_back(name, std::move(rows));
  }
  for (const auto& [name, rows] : data) {
    MKV_CHECK(prompts.contains(name) && prompts[name].is_string(), "--dataset2prompt: no template for dataset '{}'", name);
    MKV_CHECK(maxlens.contains(name) && maxlens[name].is_number_integer() && maxlens[name].get<int>() > 0,
              "--dataset2maxlen: no positive generation length for dataset '{}'", name);
    longbench_metric(name);  // refuses unknown datasets and those needing a Chinese segmenter
    MKV_CHECK(!rows.empty(), "--data: dataset '{}' has no rows", name);
  }

  const std::optional<ChatTemplate> chat = eval_chat_template(config.chat_template, tokenizer);
  const int context_length = config.session.n_ctx > 0 ? config.session.n_ctx : model.config().context_length;

  MKV_CHECK(config.max_length < context_length, "--max-length {} does not fit the context of {} (raise -c)",
            config.max_length, context_length);
  // Per dataset, before any run starts: the generation length fits the context and leaves room
  // for a prompt, and the template names only {context} and {input}.
  for (const auto& [name, rows] : data) {
    const int64_t max_gen = maxlens[name].get<int64_t>();
    MKV_CHECK(max_gen < context_length, "--dataset2maxlen: {}'s generation length {} does not fit the context of {} (raise -c)",
              name, max_gen, context_length);
    const int64_t max_length = config.max_length > 0 ? config.max_length : context_length - max_gen - 1;
    MKV_CHECK(max_length > 1, "--max-length: the context {} leaves no room for {}'s {} generated tokens",
              context_length, name, max_gen);
    format_longbench_prompt(prompts[name].get<std::string>(), LongBenchRow{}, name);
  }
  const LongBenchBenchmark benchmark(std::move(data), prompts, maxlens, config, context_length, chat, tokenizer);
  return run_evaluation(model, tokenizer, config, benchmark, log);
}

}  // namespace mkv::eval
