#include "eval/metrics/ruler_metrics.h"

#include "core/error.h"
#include "eval/metrics/python_text.h"

namespace mkv::eval {
namespace {

bool contains_lowered(std::string_view lowered_prediction, std::string_view reference) {
  return lowered_prediction.find(py::lower(reference)) != std::string_view::npos;
}

}  // namespace

std::string ruler_postprocess(std::string_view prediction) {
  std::string text = py::strip(prediction);
  for (char& c : text)
    if (static_cast<unsigned char>(c) <= 0x1F) c = '\n';
  return py::strip(text);
}

double string_match_all(std::string_view prediction, const std::vector<std::string>& references) {
  MKV_CHECK(!references.empty(), "RULER sample has no reference outputs");
  const std::string lowered = py::lower(prediction);
  double found = 0.0;
  for (const auto& reference : references) found += contains_lowered(lowered, reference) ? 1.0 : 0.0;
  return found / static_cast<double>(references.size());
}

double string_match_part(std::string_view prediction, const std::vector<std::string>& references) {
  MKV_CHECK(!references.empty(), "RULER sample has no reference outputs");
  const std::string lowered = py::lower(prediction);
  for (const auto& reference : references)
    if (contains_lowered(lowered, reference)) return 1.0;
  return 0.0;
}

RulerMetric ruler_metric(std::string_view task) {
  return task.starts_with("qa") ? RulerMetric::string_match_part : RulerMetric::string_match_all;
}

RulerSampleScores ruler_sample_scores(std::string_view task, const std::vector<std::string>& predictions,
                                      const std::vector<std::vector<std::string>>& references) {
  MKV_CHECK(predictions.size() == references.size(),
            "RULER task '{}': {} predictions but {} reference lists", task, predictions.size(), references.size());
  const RulerMetric metric = ruler_metric(task);
  RulerSampleScores result;
  result.values.reserve(predictions.size());
  for (size_t i = 0; i < predictions.size(); ++i) {
    const std::string prediction = ruler_postprocess(predictions[i]);
    if (prediction.empty()) ++result.nulls;
    result.values.push_back(metric == RulerMetric::string_match_part ? string_match_part(prediction, references[i])
                                                                     : string_match_all(prediction, references[i]));
  }
  return result;
}

double ruler_mean_score(const std::vector<double>& values) {
  double total = 0.0;
  for (double v : values) total += v;
  return py::round2(total / static_cast<double>(values.size()) * 100);
}

RulerTaskScore ruler_task_score(std::string_view task, const std::vector<std::string>& predictions,
                                const std::vector<std::vector<std::string>>& references) {
  MKV_CHECK(!predictions.empty(), "RULER task '{}' has no predictions to score", task);
  const RulerSampleScores samples = ruler_sample_scores(task, predictions, references);
  RulerTaskScore result;
  result.n = static_cast<int>(predictions.size());
  result.nulls = samples.nulls;
  result.score = ruler_mean_score(samples.values);
  return result;
}

}  // namespace mkv::eval
