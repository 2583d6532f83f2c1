#include "eval/report/score_report.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

namespace mkv::eval::report {
namespace {

using RunKey = std::tuple<std::string, std::string, int64_t>;  // model, press, budget

std::string budget_label(int64_t budget) { return budget == 0 ? "full" : std::to_string(budget); }

// Per run: task -> score.
std::map<RunKey, std::map<std::string, double>> scores_by_run(const std::vector<ResultRecord>& records) {
  std::map<RunKey, std::map<std::string, double>> runs;
  for (const auto& r : records) runs[{r.model, r.press, r.budget}][r.task] = r.score;
  return runs;
}

std::set<std::string> all_tasks(const std::vector<ResultRecord>& records) {
  std::set<std::string> tasks;
  for (const auto& r : records) tasks.insert(r.task);
  return tasks;
}

}  // namespace

std::string markdown_table(const std::vector<ResultRecord>& records) {
  const std::set<std::string> tasks = all_tasks(records);
  std::string table = "| model | press | budget |";
  std::string rule = "|---|---|---:|";
  for (const auto& task : tasks) table += fmt::format(" {} |", task), rule += "---:|";
  table += " avg |\n" + rule + "---:|\n";
  for (const auto& [key, scores] : scores_by_run(records)) {
    const auto& [model, press, budget] = key;
    table += fmt::format("| {} | {} | {} |", model, press, budget_label(budget));
    double sum = 0;
    for (const auto& task : tasks) {
      auto it = scores.find(task);
      table += it == scores.end() ? " – |" : fmt::format(" {:.2f} |", it->second);
      if (it != scores.end()) sum += it->second;
    }
    table += scores.size() == tasks.size() ? fmt::format(" {:.2f} |\n", sum / static_cast<double>(tasks.size()))
                                           : " – |\n";
  }
  return table;
}

LinePlot score_vs_budget_plot(const std::vector<ResultRecord>& records, const std::string& model,
                              const std::string& task) {
  std::vector<ResultRecord> selected;
  for (const auto& r : records)
    if (r.model == model) selected.push_back(r);
  const std::set<std::string> tasks = all_tasks(selected);
  LinePlot plot;
  plot.title = fmt::format("{}: {} vs KV budget", model, task.empty() ? "mean score" : task);
  plot.x_label = "budget (tokens per KV head)";
  plot.y_label = task.empty() ? "mean score" : "score";
  plot.log2_x = true;
  std::map<std::string, PlotSeries> series;  // by press
  for (const auto& [key, scores] : scores_by_run(selected)) {
    const auto& [run_model, press, budget] = key;
    double value = 0;
    if (task.empty()) {
      if (scores.size() != tasks.size()) continue;  // a point must average the same tasks
      for (const auto& [name, score] : scores) value += score / static_cast<double>(tasks.size());
    } else {
      auto it = scores.find(task);
      if (it == scores.end()) continue;
      value = it->second;
    }
    PlotSeries& s = series[budget == 0 ? press + " (full cache)" : press];
    s.name = budget == 0 ? press + " (full cache)" : press;
    s.reference = budget == 0;
    s.points.emplace_back(static_cast<double>(budget), value);
  }
  for (auto& [name, s] : series) plot.series.push_back(std::move(s));
  return plot;
}

}  // namespace mkv::eval::report
