// RULER scoring, reproducing NVIDIA/RULER `scripts/eval/evaluate.py` and
// `scripts/eval/synthetic/constants.py`.
//
// Predictions are post-processed (strip, every [\x00-\x1f] byte replaced by '\n', strip again);
// references are not. Matching is case-insensitive substring search after Python str.lower()
// (see python_text.h for the Unicode coverage). Task scores are round(Σ / n · 100, 2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mkv::eval {

// evaluate.py postprocess_pred.
std::string ruler_postprocess(std::string_view prediction);

// Per-sample metrics on an already post-processed prediction, in [0, 1].
double string_match_all(std::string_view prediction, const std::vector<std::string>& references);
double string_match_part(std::string_view prediction, const std::vector<std::string>& references);

enum class RulerMetric { string_match_all, string_match_part };

// qa_* tasks use string_match_part, every other task string_match_all (as RULER's TASKS table
// maps niah, variable_tracking, common/freq_words_extraction and qa).
RulerMetric ruler_metric(std::string_view task);

struct RulerTaskScore {
  double score = 0;  // round(100 · mean, 2)
  int nulls = 0;     // predictions empty after post-processing
  int n = 0;
};

// Each raw prediction's metric value in [0, 1] (post-processing applied here), and how many were
// empty. MkvError on size mismatch or a sample without references.
struct RulerSampleScores {
  std::vector<double> values;  // (n) in the order given
  int nulls = 0;
};
RulerSampleScores ruler_sample_scores(std::string_view task, const std::vector<std::string>& predictions,
                                      const std::vector<std::vector<std::string>>& references);

// round(100 · mean, 2) of per-sample values, summed in the order given: shards merged in index order
// give the unsharded run's score exactly (report::merge_records).
double ruler_mean_score(const std::vector<double>& values);

// Scores raw predictions (post-processing applied here). MkvError on size mismatch, no samples or a
// sample without references.
RulerTaskScore ruler_task_score(std::string_view task, const std::vector<std::string>& predictions,
                                const std::vector<std::vector<std::string>>& references);

}  // namespace mkv::eval
