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

RulerTaskScore ruler_task_score(std::string_view task, const std::vector<std::string>& predictions,
                                const std::vector<std::vector<std::string>>& references) {
  MKV_CHECK(predictions.size() == references.size(),
            "RULER task '{}': {} predictions but {} reference lists", task, predictions.size(), references.size());
  MKV_CHECK(!predictions.empty(), "RULER task '{}' has no predictions to score", task);
  const RulerMetric metric = ruler_metric(task);
  RulerTaskScore result;
  result.n = static_cast<int>(predictions.size());
  double total = 0.0;
  for (size_t i = 0; i < predictions.size(); ++i) {
    const std::string prediction = ruler_postprocess(predictions[i]);
    if (prediction.empty()) ++result.nulls;
    total += metric == RulerMetric::string_match_part ? string_match_part(prediction, references[i])
                                                      : string_match_all(prediction, references[i]);
  }
  result.score = py::round2(total / static_cast<double>(predictions.size()) * 100);
  return result;
}

}  // namespace mkv::eval
