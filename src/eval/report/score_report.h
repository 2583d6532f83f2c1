// Views of merged result records: a markdown table and score-vs-budget plots.
#pragma once

#include <string>
#include <vector>

#include "eval/report/result_records.h"
#include "eval/report/svg_plot.h"

namespace mkv::eval::report {

// One row per (model, press, budget), one column per task (sorted), then "avg" (mean of the row's
// tasks, over rows that have every task; "–" otherwise). Scores with 2 decimals; budget 0 is
// shown as "full". Rows sorted by model, press, budget.
std::string markdown_table(const std::vector<ResultRecord>& records);

// Score vs budget for one model, one series per press (sorted by budget); budget-0 (full cache)
// records become a dashed reference line. `task` empty ⇒ the mean over the tasks every point has.
LinePlot score_vs_budget_plot(const std::vector<ResultRecord>& records, const std::string& model,
                              const std::string& task);

}  // namespace mkv::eval::report
