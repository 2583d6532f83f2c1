#include "sweep/sweep_plan.h"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "core/error.h"

namespace mkv::sweep {
namespace fs = std::filesystem;

std::vector<SweepTask> plan_tasks(const SweepSpec& spec) {
  const std::vector<eval::PressSetting> settings = eval::expand_press_settings(spec.presses, spec.budgets);
  std::vector<SweepTask> tasks;
  std::set<fs::path> dirs;
  for (std::size_t m = 0; m < spec.models.size(); ++m) {
    for (const eval::PressSetting& setting : settings) {
      for (int shard = 0; shard < spec.shards; ++shard) {
        SweepTask t;
        t.index = static_cast<int>(tasks.size());
        t.model = m;
        t.setting = setting;
        t.shard = shard;
        t.shards = spec.shards;
        t.dir = spec.output / spec.models[m].stem / setting.label / fmt::format("shard{}of{}", shard, spec.shards);
        // eval's own naming (eval_runner.cpp): the label, then _shard{i}of{n} when sharded.
        fs::path setting_dir = t.dir / setting.label;
        if (spec.shards > 1) setting_dir += fmt::format("_shard{}of{}", shard, spec.shards);
        if (spec.benchmark == "ruler") {
          t.run_dir = setting_dir;
          t.score_file = t.run_dir / "summary.csv";
        } else {  // LongBench keeps its files in pred/{model} (longbench_eval.h)
          t.run_dir = setting_dir / "pred" / spec.models[m].stem;
          t.score_file = t.run_dir / "result.json";
        }
        // Labels are the press spec with unsafe characters replaced: two specs could meet.
        MKV_CHECK(dirs.insert(t.dir).second, "{}: presses '{}' and another one share the folder name '{}'; give "
                  "one of them its parameters in another form", spec.file.string(), setting.spec, setting.label);
        tasks.push_back(std::move(t));
      }
    }
  }
  return tasks;
}

std::vector<std::string> eval_arguments(const SweepSpec& spec, const SweepTask& task) {
  std::vector<std::string> a = {"eval", spec.benchmark, "-m", spec.models[task.model].path.string(), "--press",
                                task.setting.spec};
  if (!task.setting.press.is_full()) a.insert(a.end(), {"--budgets", std::to_string(task.setting.budget)});
  a.insert(a.end(), {"--shard", fmt::format("{}/{}", task.shard, task.shards), "-t", std::to_string(spec.threads)});
  a.insert(a.end(), {"--protocol", spec.protocol, "--chat-template", spec.chat_template, "--cache-type-k",
                     spec.cache_type, "--ubatch-size", std::to_string(spec.ubatch_size)});
  if (spec.ctx_size > 0) a.insert(a.end(), {"-c", std::to_string(spec.ctx_size)});
  if (spec.compress_chunks) a.push_back("--compress-chunks");
  if (spec.benchmark == "ruler") {
    const RulerOptions& r = spec.ruler;
    if (!r.data.empty()) {
      for (const fs::path& d : r.data) a.insert(a.end(), {"--data", d.string()});
    } else {
      a.insert(a.end(), {"--tasks", fmt::format("{}", fmt::join(r.tasks, ",")), "--length", std::to_string(r.length),
                         "--samples", std::to_string(r.samples), "--seed", std::to_string(r.seed), "--essay",
                         r.essay.string()});
    }
  } else {
    const LongBenchOptions& l = spec.longbench;
    a.insert(a.end(), {"--data", l.data.string(), "--dataset2prompt", l.dataset2prompt.string(), "--dataset2maxlen",
                       l.dataset2maxlen.string()});
    if (!l.datasets.empty()) a.insert(a.end(), {"--datasets", fmt::format("{}", fmt::join(l.datasets, ","))});
    if (l.max_length > 0) a.insert(a.end(), {"--max-length", std::to_string(l.max_length)});
  }
  a.insert(a.end(), {"-o", task.dir.string()});
  return a;
}

std::string index_ranges(const std::vector<int>& indices) {
  MKV_CHECK(!indices.empty(), "no task indices");
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(indices[i]) : fmt::format("{}-{}", indices[i], indices[j]);
    i = j + 1;
  }
  return out;
}

namespace {

int parse_index(std::string_view text, int count, const std::string& what, const std::string& item) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  MKV_CHECK(!text.empty() && error == std::errc() && end == text.data() + text.size() && value >= 0,
            "{}: '{}' is not a task index or range (e.g. 0-3,5)", what, item);
  MKV_CHECK(value < count, "{}: task {} does not exist (the sweep has tasks 0-{})", what, value, count - 1);
  return value;
}

}  // namespace

std::vector<int> parse_index_ranges(const std::string& text, int count, const std::string& what) {
  std::set<int> indices;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t dash = item.find('-');
    const int first = parse_index(std::string_view(item).substr(0, dash), count, what, item);
    const int last = dash == std::string::npos ? first : parse_index(std::string_view(item).substr(dash + 1), count, what, item);
    MKV_CHECK(first <= last, "{}: '{}' is an empty range", what, item);
    for (int i = first; i <= last; ++i) indices.insert(i);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {indices.begin(), indices.end()};
}

}  // namespace mkv::sweep
