#include "eval/ruler/ruler_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <ostream>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/runner/eval_runner.h"
#include "eval/metrics/ruler_metrics.h"
#include "eval/ruler/ruler_generator.h"
#include "text/chat_template.h"

namespace mkv::eval {
namespace fs = std::filesystem;

std::size_t ruler_question_start(const std::string& input) {
  std::size_t end = input.find_last_not_of(" \n\t");
  if (end == std::string::npos) return std::string::npos;
  const std::size_t nl = input.rfind('\n', end);
  return nl == std::string::npos ? std::string::npos : nl + 1;
}

namespace {

struct TaskData {
  std::string task;
  std::vector<ruler::RulerSample> samples;
  int tokens_to_generate = 128;
};

// RULER's tokens_to_generate of a task name; 128 (niah) for unknown names such as file stems.
int tokens_to_generate_for(const std::string& task) {
  for (const auto& spec : ruler::all_task_specs())
    if (task == spec.name || task.find(spec.name) != std::string::npos) return spec.tokens_to_generate;
  return 128;
}

std::string task_of_file(const fs::path& path) {
  if (path.filename() == "validation.jsonl" && path.has_parent_path()) return path.parent_path().filename().string();
  return path.stem().string();
}

// A resumed predictions file must hold rows of these samples only, with the fields scoring reads.
void check_stored_rows(const ResultsStore& store, const TaskData& d) {
  std::set<int64_t> indices;
  for (const auto& s : d.samples) indices.insert(s.index);
  store.require_indices_in(indices, fmt::format("the samples of task {}", d.task));
  store.require_field("pred", "string");
  store.require_field("outputs", "array of strings");
}

// RULER in the evaluation runner: rows {index, pred, input, outputs, others, truncation, length}
// in OUT/{run}/pred/{task}.jsonl; summary.csv per run (RULER's evaluate.py).
class RulerBenchmark : public EvalBenchmark {
 public:
  using Render = std::function<std::string(std::string_view input, std::string_view answer_prefix)>;
  RulerBenchmark(std::vector<TaskData> data, const Tokenizer& tokenizer, Protocol protocol, Render render)
      : data_(std::move(data)), tokenizer_(tokenizer), protocol_(protocol), render_(std::move(render)) {
    for (const TaskData& d : data_) {
      EvalTask task{d.task, {}};
      for (const auto& sample : d.samples) task.indices.push_back(sample.index);
      tasks_.push_back(std::move(task));
    }
  }
  const char* name() const override { return "ruler"; }
  const std::vector<EvalTask>& tasks() const override { return tasks_; }
  fs::path predictions_path(const fs::path& run_dir, const EvalTask& task) const override {
    return run_dir / "pred" / (task.name + ".jsonl");
  }
  void check_stored(const ResultsStore& store, std::size_t task) const override { check_stored_rows(store, data_[task]); }

  PreparedSample prepare(std::size_t task, std::size_t sample) const override {
    const TaskData& d = data_[task];
    const ruler::RulerSample& s = d.samples[sample];
    const std::string prompt = render_(s.input, s.answer_prefix);
    PreparedSample out;
    out.request.max_new_tokens = d.tokens_to_generate;
    if (protocol_ == Protocol::kvpress) {
      const std::size_t q_in_input = ruler_question_start(s.input);
      MKV_CHECK(q_in_input != std::string::npos,
                "task {} sample {}: no question line to split off for --protocol kvpress", d.task, s.index);
      split_at_question(prompt, std::string_view(s.input).substr(q_in_input, 48), tokenizer_,
                        fmt::format("task {} sample {}", d.task, s.index), out.request);
    } else {
      out.request.context = tokenizer_.encode(prompt, true, true);
    }
    out.row = {{"index", s.index},     {"pred", ""},         {"input", prompt},   {"outputs", s.outputs},
               {"others", s.others},   {"truncation", -1},   {"length", s.length}};
    return out;
  }
  // A sample without a length of its own records what the run used: prompt + generation budget.
  void complete(nlohmann::ordered_json& row, const GenerationResult& result,
                const GenerationRequest& request) const override {
    if (row["length"].get<int64_t>() <= 0) row["length"] = result.prompt_tokens + request.max_new_tokens;
  }

  const char* score_file() const override { return "summary.csv"; }
  std::map<std::string, double> score(const fs::path& run_dir, const std::vector<const ResultsStore*>& stores) const override {
    std::map<std::string, double> scores;
    std::vector<std::string> tasks, shown, nulls;
    for (std::size_t t = 0; t < data_.size(); ++t) {
      const ResultsStore& store = *stores[t];
      if (store.size() == 0) continue;
      std::vector<std::string> preds;
      std::vector<std::vector<std::string>> refs;
      // In index order (a resumed run's file may not be): the order the report merges shards in.
      std::vector<const nlohmann::json*> rows;
      for (const auto& row : store.rows()) rows.push_back(&row);
      std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
        return a->at("index").get<int64_t>() < b->at("index").get<int64_t>();
      });
      for (const nlohmann::json* row_ptr : rows) {
        const nlohmann::json& row = *row_ptr;
        preds.push_back(row.at("pred").get<std::string>());
        refs.push_back(row.at("outputs").get<std::vector<std::string>>());
      }
      const RulerTaskScore score = ruler_task_score(data_[t].task, preds, refs);
      scores[data_[t].task] = score.score;
      tasks.push_back(data_[t].task);
      shown.push_back(fmt::format("{:.2f}", score.score));
      nulls.push_back(fmt::format("{}/{}", score.nulls, score.n));
    }
    if (!tasks.empty())
      write_text_file(run_dir / score_file(), fmt::format("Tasks,{}\nScore,{}\nNulls,{}\n", fmt::join(tasks, ","),
                                                           fmt::join(shown, ","), fmt::join(nulls, ",")));
    return scores;
  }

 private:
  std::vector<TaskData> data_;
  std::vector<EvalTask> tasks_;
  const Tokenizer& tokenizer_;
  Protocol protocol_;
  Render render_;
};

}  // namespace

RulerEvalSummary run_ruler_eval(Transformer& model, const Tokenizer& tokenizer, const RulerEvalConfig& config,
                                std::ostream& log) {
  MKV_CHECK(!config.settings.empty(), "no press to run");
  MKV_CHECK(!config.output_dir.empty(), "-o DIR is required");
  fs::create_directories(config.output_dir);

  // The prompt as the model sees it: chat template around the input, then the answer prefix.
  const std::optional<ChatTemplate> chat = eval_chat_template(config.chat_template, tokenizer);
  auto render = [&](std::string_view input, std::string_view answer_prefix) {
    std::string prompt = chat ? chat->render({{"user", std::string(input)}}, true) : std::string(input);
    return prompt + std::string(answer_prefix);
  };
  auto count = [&](std::string_view text) {
    return static_cast<int64_t>(tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/true).size());
  };

  // RULER's length is prompt + generated tokens: it must fit the context before any haystack is
  // built (a huge --length would otherwise grow haystacks for a very long time).
  const int64_t context_tokens =
      config.session.n_ctx > 0 ? config.session.n_ctx : model.config().context_length;
  if (config.data_files.empty()) {
    for (const std::string& task : config.tasks) ruler::task_spec(task);  // an unknown task name first
    MKV_CHECK(config.length <= context_tokens,
              "--length {} exceeds the context of {} tokens ({}); --length counts the prompt and the generated tokens",
              config.length, context_tokens, config.session.n_ctx > 0 ? "-c" : "the model's context_length");
  }

  std::vector<TaskData> data;
  if (!config.data_files.empty()) {
    for (const auto& file : config.data_files) {
      MKV_CHECK(fs::exists(file), "--data: file '{}' does not exist", file.string());
      TaskData d{task_of_file(file), ruler::read_ruler_jsonl(file), 0};
      d.tokens_to_generate = tokens_to_generate_for(d.task);
      MKV_CHECK(!d.samples.empty(), "--data: '{}' holds no samples", file.string());
      data.push_back(std::move(d));
    }
  } else {
    MKV_CHECK(!config.tasks.empty(), "no RULER tasks given (--tasks) and no --data files");
    for (const std::string& task : config.tasks) {
      ruler::RulerConfig rc;
      rc.task = task;
      rc.max_seq_length = config.length;
      rc.num_samples = config.samples;
      rc.seed = config.seed;
      rc.essay_paths = config.essays;
      rc.count_tokens = count;
      rc.render_prompt = render;
      TaskData d{task, {}, 128};
      try {
        ruler::RulerGenerator generator(rc);
        d.samples = generator.generate();
        d.tokens_to_generate = generator.spec().tokens_to_generate;
      } catch (const MkvError& e) {
        fail("RULER task {} at --length {}: {}", task, config.length, e.what());
      }
      ruler::write_validation_jsonl(config.output_dir / "data", task, d.samples);
      data.push_back(std::move(d));
    }
  }

  // Every prompt must fit the context (checked before any work: the longest input of each task).
  const int64_t n_ctx = context_tokens;
  for (const auto& d : data) {
    const ruler::RulerSample* longest = nullptr;
    for (const auto& s : d.samples)
      if (!longest || s.input.size() > longest->input.size()) longest = &s;
    const int64_t tokens = count(render(longest->input, longest->answer_prefix));
    MKV_CHECK(tokens < n_ctx, "task {} sample {}: prompt of {} tokens does not fit the context of {} (raise -c)",
              d.task, longest->index, tokens, n_ctx);
  }

  const RulerBenchmark benchmark(std::move(data), tokenizer, config.protocol, render);
  return run_evaluation(model, tokenizer, config, benchmark, log);
}

}  // namespace mkv::eval
