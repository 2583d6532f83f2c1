// momentkv report DIR...: merges result folders (RULER/LongBench runs, shards) into one markdown
// table and score-vs-budget SVG plots (one per model: the task mean, plus one per task).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "eval/report/result_records.h"
#include "eval/report/score_report.h"
#include "sweep/shard_coverage.h"

namespace mkv::cli {
namespace fs = std::filesystem;
namespace {

bool is_result_folder(const fs::path& p) { return fs::exists(p / "scores.jsonl") || fs::exists(p / "run.json"); }

// A folder that is a result folder, or every result folder below it.
void collect(const fs::path& root, std::vector<fs::path>& out) {
  MKV_CHECK(fs::is_directory(root), "report: '{}' is not a folder", root.string());
  if (is_result_folder(root)) {
    out.push_back(root);
    return;
  }
  std::vector<fs::path> found;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_directory() && is_result_folder(entry.path())) found.push_back(entry.path());
  MKV_CHECK(!found.empty(), "report: no result folders (run.json or scores.jsonl) in '{}'", root.string());
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
}

std::string safe(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return s;
}

}  // namespace

int run_report(const ReportOptions& o) {
  MKV_CHECK(!o.folders.empty(), "report: give at least one result folder");
  std::vector<fs::path> found;
  for (const auto& f : o.folders) collect(f, found);
  // A folder reached twice (a root and a folder inside it, or one root given twice) counts once.
  std::set<fs::path> seen;
  std::erase_if(found, [&](const fs::path& p) { return !seen.insert(fs::weakly_canonical(p)).second; });
  // Unfinished runs (run.json, no scores yet) are reported as such and left out; the finished
  // runs beside them are still reported.
  std::vector<fs::path> folders;
  for (const auto& folder : found) {
    if (!eval::report::is_unfinished_run(folder)) {
      folders.push_back(folder);
      continue;
    }
    eval::report::read_run_json(folder);  // a malformed run.json is an error, not an unfinished run
    fmt::print(stderr, "warning: report: skipping {}: an unfinished run (run.json but no summary.csv or result.json yet)\n",
               escape_for_message(folder.string()));
  }
  MKV_CHECK(!folders.empty(), "report: no finished runs in {} (only unfinished ones, skipped above)",
            fmt::join(o.folders, ", "));
  for (const std::string& warning : sweep::check_shard_coverage(folders)) fmt::print(stderr, "warning: {}\n", warning);
  const auto records = eval::report::merge_result_folders(folders);
  MKV_CHECK(!records.empty(), "report: the folders hold no scores");
  const std::string table = eval::report::markdown_table(records);
  fmt::print("{}", table);
  if (o.output_dir.empty()) return 0;
  fs::create_directories(o.output_dir);
  std::set<std::string> models, tasks;
  for (const auto& r : records) models.insert(r.model), tasks.insert(r.task);
  std::string md = fmt::format("# Results\n\nMerged from {} result folder(s).\n\n{}\n", folders.size(), table);
  for (const auto& model : models) {
    const std::string name = safe(model) + "_mean.svg";
    write_text_file(fs::path(o.output_dir) / name,
                    eval::report::render_svg(eval::report::score_vs_budget_plot(records, model, "")));
    md += fmt::format("![{} mean]({})\n\n", model, name);
    if (tasks.size() > 1)
      for (const auto& task : tasks) {
        const std::string tname = safe(model) + "_" + safe(task) + ".svg";
        write_text_file(fs::path(o.output_dir) / tname,
                        eval::report::render_svg(eval::report::score_vs_budget_plot(records, model, task)));
        md += fmt::format("![{} {}]({})\n\n", model, task, tname);
      }
  }
  write_text_file(fs::path(o.output_dir) / "report.md", md);
  fmt::print(stderr, "wrote {}/report.md and plots\n", o.output_dir);
  return 0;
}

}  // namespace mkv::cli
