#include "eval/ruler_eval.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <ostream>

#include "core/error.h"
#include "core/progress.h"
#include "eval/metrics/ruler_metrics.h"
#include "eval/ruler/ruler_generator.h"
#include "model/chat_template.h"

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

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  MKV_CHECK(out.good(), "cannot write '{}'", path.string());
  out << text;
}

}  // namespace

RulerEvalSummary run_ruler_eval(Transformer& model, const Tokenizer& tokenizer, const RulerEvalConfig& config,
                                std::ostream& log) {
  MKV_CHECK(!config.settings.empty(), "no press to run");
  MKV_CHECK(!config.output_dir.empty(), "-o DIR is required");
  fs::create_directories(config.output_dir);

  // The prompt as the model sees it: chat template around the input, then the answer prefix.
  std::optional<ChatTemplate> chat;
  if (config.chat_template == "auto") {
    if (!tokenizer.vocab().chat_template.empty()) chat = ChatTemplate::for_vocab(tokenizer.vocab());
  } else if (config.chat_template != "none") {
    chat = ChatTemplate::by_name(config.chat_template);
  }
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
      config.generator.n_ctx > 0 ? config.generator.n_ctx : model.config().context_length;
  if (config.data_files.empty()) {
    for (const std::string& task : config.tasks) ruler::task_spec(task);  // an unknown task name first
    MKV_CHECK(config.length <= context_tokens,
              "--length {} exceeds the context of {} tokens ({}); --length counts the prompt and the generated tokens",
              config.length, context_tokens, config.generator.n_ctx > 0 ? "-c" : "the model's context_length");
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

  int64_t total = 0, already = 0;
  std::vector<std::vector<char>> selected(data.size());
  for (std::size_t t = 0; t < data.size(); ++t)
    for (const auto& s : data[t].samples) selected[t].push_back(config.shard.selects(s.index));

  RulerEvalSummary summary;
  struct Run {
    fs::path dir;
    std::vector<std::unique_ptr<ResultsStore>> stores;
  };
  std::vector<Run> runs;
  for (const PressSetting& setting : config.settings) {
    std::string name = setting.label;
    if (config.shard.count > 1) name += fmt::format("_shard{}of{}", config.shard.shard, config.shard.count);
    Run run{config.output_dir / name, {}};
    fs::create_directories(run.dir / "pred");
    nlohmann::ordered_json meta = {{"model", config.model_name},
                                   {"press", setting.spec},
                                   {"budget", setting.budget},
                                   {"protocol", protocol_name(config.protocol)},
                                   {"benchmark", "ruler"},
                                   {"shard", fmt::format("{}/{}", config.shard.shard, config.shard.count)}};
    write_text(run.dir / "run.json", meta.dump(1) + "\n");
    for (std::size_t t = 0; t < data.size(); ++t) {
      run.stores.push_back(std::make_unique<ResultsStore>(run.dir / "pred" / (data[t].task + ".jsonl"), log));
      check_stored_rows(*run.stores.back(), data[t]);
      for (std::size_t i = 0; i < data[t].samples.size(); ++i) {
        if (!selected[t][i]) continue;
        ++total;
        already += run.stores.back()->done(data[t].samples[i].index);
      }
    }
    summary.run_dirs.push_back(run.dir);
    runs.push_back(std::move(run));
  }

  // Every prompt must fit the context (checked before any work: the longest input of each task).
  const int64_t n_ctx = config.generator.n_ctx > 0 ? config.generator.n_ctx : model.config().context_length;
  for (const auto& d : data) {
    const ruler::RulerSample* longest = nullptr;
    for (const auto& s : d.samples)
      if (!longest || s.input.size() > longest->input.size()) longest = &s;
    const int64_t tokens = count(render(longest->input, longest->answer_prefix));
    MKV_CHECK(tokens < n_ctx, "task {} sample {}: prompt of {} tokens does not fit the context of {} (raise -c)",
              d.task, longest->index, tokens, n_ctx);
  }

  ProgressBar bar("ruler", total, already);
  for (std::size_t r = 0; r < runs.size() && !summary.stopped_early; ++r) {
    const PressSetting& setting = config.settings[r];
    for (std::size_t t = 0; t < data.size() && !summary.stopped_early; ++t) {
      ResultsStore& store = *runs[r].stores[t];
      for (std::size_t i = 0; i < data[t].samples.size(); ++i) {
        const ruler::RulerSample& s = data[t].samples[i];
        if (!selected[t][i] || store.done(s.index)) continue;
        if (config.max_samples >= 0 && summary.predicted >= config.max_samples) {
          summary.stopped_early = true;
          break;
        }
        const std::string prompt = render(s.input, s.answer_prefix);
        GenerationRequest request;
        request.max_new_tokens = data[t].tokens_to_generate;
        if (config.protocol == Protocol::kvpress) {
          const std::size_t q_in_input = ruler_question_start(s.input);
          MKV_CHECK(q_in_input != std::string::npos,
                    "task {} sample {}: no question line to split off for --protocol kvpress", data[t].task, s.index);
          const std::string question_head = s.input.substr(q_in_input, 48);
          const std::size_t at = prompt.rfind(question_head);
          MKV_CHECK(at != std::string::npos && at > 0, "task {} sample {}: question not found in the prompt",
                    data[t].task, s.index);
          request.context = tokenizer.encode(prompt.substr(0, at), true, true);
          request.question = tokenizer.encode(prompt.substr(at), false, true);
        } else {
          request.context = tokenizer.encode(prompt, true, true);
        }
        const mkv::GenerationResult g = generate_greedy(model, tokenizer, setting,
                                                   request, config.generator);
        nlohmann::ordered_json row = {{"index", s.index},    {"pred", g.text},       {"input", prompt},
                                      {"outputs", s.outputs}, {"others", s.others},  {"truncation", -1},
                                      {"length", s.length > 0 ? s.length : g.prompt_tokens + request.max_new_tokens}};
        store.append(row);
        ++summary.predicted;
        bar.advance();
      }
    }
  }
  bar.finish();

  // summary.csv per run, from every prediction on disk (this shard's).
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::vector<std::string> tasks, scores, nulls;
    for (std::size_t t = 0; t < data.size(); ++t) {
      const ResultsStore& store = *runs[r].stores[t];
      if (store.size() == 0) continue;
      std::vector<std::string> preds;
      std::vector<std::vector<std::string>> refs;
      for (const auto& row : store.rows()) {
        preds.push_back(row.at("pred").get<std::string>());
        refs.push_back(row.at("outputs").get<std::vector<std::string>>());
      }
      const RulerTaskScore score = ruler_task_score(data[t].task, preds, refs);
      tasks.push_back(data[t].task);
      scores.push_back(fmt::format("{:.2f}", score.score));
      nulls.push_back(fmt::format("{}/{}", score.nulls, score.n));
    }
    if (tasks.empty()) continue;
    write_text(runs[r].dir / "summary.csv", fmt::format("Tasks,{}\nScore,{}\nNulls,{}\n", fmt::join(tasks, ","),
                                                        fmt::join(scores, ","), fmt::join(nulls, ",")));
  }
  return summary;
}

}  // namespace mkv::eval
