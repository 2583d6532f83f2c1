#include "eval/metrics/longbench_metrics.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "eval/metrics/python_text.h"

namespace mkv::eval {
namespace {

// Python's string.punctuation.
bool is_ascii_punctuation(char32_t c) {
  return c < 0x80 && std::string_view(R"(!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)").find(static_cast<char>(c)) !=
                         std::string_view::npos;
}

// re.sub(r"\b(a|an|the)\b", " ", text): boundaries are evaluated on the original text.
std::u32string remove_articles(const std::u32string& text) {
  static const std::u32string kArticles[] = {U"a", U"an", U"the"};  // regex alternation order
  const auto word_at = [&](size_t i) { return i < text.size() && py::is_word_char(text[i]); };
  const auto boundary = [&](size_t i) { return (i > 0 && word_at(i - 1)) != word_at(i); };
  std::u32string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t matched = 0;
    if (boundary(i)) {
      for (const auto& article : kArticles) {
        if (text.compare(i, article.size(), article) == 0 && boundary(i + article.size())) {
          matched = article.size();
          break;
        }
      }
    }
    if (matched > 0) {
      out.push_back(U' ');
      i += matched;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// Maps words to dense ids so LCS tables compare integers.
class WordIds {
 public:
  std::vector<int> ids(const std::vector<std::string>& words) {
    std::vector<int> out;
    out.reserve(words.size());
    for (const auto& word : words) out.push_back(ids_.try_emplace(word, static_cast<int>(ids_.size())).first->second);
    return out;
  }

 private:
  std::unordered_map<std::string, int> ids_;
};

// Length of the longest common subsequence (rolling rows, O(|a|·|b|) time).
template <typename Seq>
size_t lcs_length(const Seq& a, const Seq& b) {
  std::vector<size_t> previous(b.size() + 1, 0), current(b.size() + 1, 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j)
      current[j] = a[i - 1] == b[j - 1] ? previous[j - 1] + 1 : std::max(previous[j], current[j - 1]);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// rouge_score._recon_lcs(x, y): the LCS words, reconstructed with the package's tie-breaking.
std::vector<int> reconstruct_lcs(const std::vector<int>& x, const std::vector<int>& y) {
  const size_t cols = y.size() + 1;
  std::vector<uint32_t> table((x.size() + 1) * cols, 0);  // (|x|+1, |y|+1) LCS lengths
  for (size_t i = 1; i <= x.size(); ++i)
    for (size_t j = 1; j <= y.size(); ++j)
      table[i * cols + j] = x[i - 1] == y[j - 1] ? table[(i - 1) * cols + j - 1] + 1
                                                 : std::max(table[(i - 1) * cols + j], table[i * cols + j - 1]);
  std::vector<int> words;
  size_t i = x.size(), j = y.size();
  while (i > 0 && j > 0) {
    if (x[i - 1] == y[j - 1]) {
      words.push_back(x[i - 1]);
      --i, --j;
    } else if (table[(i - 1) * cols + j] > table[i * cols + j - 1]) {
      --i;
    } else {
      --j;
    }
  }
  return words;
}

// Rouge._get_avg_scores: pieces between '.', non-empty before squashing, whitespace squashed;
// then each sentence split on ' ' (an all-blank piece yields one empty word).
std::vector<std::vector<std::string>> rouge_sentences(std::string_view text) {
  std::vector<std::vector<std::string>> sentences;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t dot = std::min(text.find('.', start), text.size());
    const std::string_view piece = text.substr(start, dot - start);
    if (!piece.empty()) {
      std::vector<std::string> words = py::split_whitespace(piece);
      if (words.empty()) words.emplace_back();
      sentences.push_back(std::move(words));
    }
    start = dot + 1;
  }
  return sentences;
}

double share_of_equal_numbers(std::string_view prediction, std::string_view expected) {
  const std::vector<std::string> numbers = py::find_digit_runs(prediction);
  if (numbers.empty()) return 0.0;
  const auto right = std::count(numbers.begin(), numbers.end(), expected);
  return static_cast<double>(right) / static_cast<double>(numbers.size());
}

// re.findall(marker + r"(\d+)", ground_truth)[0]; LongBench raises IndexError when absent.
std::string paragraph_id(std::string_view ground_truth, std::string_view marker) {
  for (size_t at = ground_truth.find(marker); at != std::string_view::npos;
       at = ground_truth.find(marker, at + 1)) {
    const std::u32string rest = py::decode_utf8(ground_truth.substr(at + marker.size()));
    size_t digits = 0;
    while (digits < rest.size() && py::is_decimal_digit(rest[digits])) ++digits;
    if (digits > 0) return py::encode_utf8(std::u32string_view(rest).substr(0, digits));
  }
  fail("retrieval answer '{}' has no '{}<number>' to compare against", ground_truth, marker);
}

}  // namespace

std::string normalize_answer(std::string_view text) {
  std::u32string chars = py::decode_utf8(py::lower(text));
  std::erase_if(chars, is_ascii_punctuation);
  const std::vector<std::string> words = py::split_whitespace(py::encode_utf8(remove_articles(chars)));
  std::string joined;
  for (const auto& word : words) {
    if (!joined.empty()) joined.push_back(' ');
    joined += word;
  }
  return joined;
}

double qa_f1_score(std::string_view prediction, std::string_view ground_truth) {
  const auto predicted = py::split_whitespace(normalize_answer(prediction));
  const auto gold = py::split_whitespace(normalize_answer(ground_truth));
  std::map<std::string, int> gold_counts;
  for (const auto& token : gold) ++gold_counts[token];
  int num_same = 0;  // Σ min(count_pred, count_gold): Counter & Counter
  for (const auto& token : predicted) {
    auto it = gold_counts.find(token);
    if (it != gold_counts.end() && it->second > 0) --it->second, ++num_same;
  }
  if (num_same == 0) return 0.0;
  const double precision = 1.0 * num_same / static_cast<double>(predicted.size());
  const double recall = 1.0 * num_same / static_cast<double>(gold.size());
  return (2 * precision * recall) / (precision + recall);
}

double rouge_l_score(std::string_view prediction, std::string_view ground_truth) {
  const auto hypothesis = rouge_sentences(prediction);
  const auto reference = rouge_sentences(ground_truth);
  if (hypothesis.empty() || reference.empty()) return 0.0;  // the package raises ValueError
  WordIds ids;
  std::vector<std::vector<int>> hyp_ids, ref_ids;
  std::set<int> hyp_vocab, ref_vocab, lcs_union;
  for (const auto& s : hypothesis) hyp_ids.push_back(ids.ids(s)), hyp_vocab.insert(hyp_ids.back().begin(), hyp_ids.back().end());
  for (const auto& s : reference) ref_ids.push_back(ids.ids(s)), ref_vocab.insert(ref_ids.back().begin(), ref_ids.back().end());
  for (const auto& ref : ref_ids)
    for (const auto& hyp : hyp_ids)
      for (int word : reconstruct_lcs(ref, hyp)) lcs_union.insert(word);
  const double llcs = static_cast<double>(lcs_union.size());
  const double recall = llcs / static_cast<double>(ref_vocab.size());
  const double precision = llcs / static_cast<double>(hyp_vocab.size());
  return 2.0 * ((precision * recall) / (precision + recall + 1e-8));
}

double classification_score(std::string_view prediction, std::string_view ground_truth,
                            const std::vector<std::string>& all_classes) {
  std::vector<std::string> matches;
  for (const auto& name : all_classes)
    if (prediction.find(name) != std::string_view::npos) matches.push_back(name);
  // Python's `for term in list: list.remove(term)`: the iterator index advances past a removal.
  for (size_t i = 0; i < matches.size(); ++i) {
    const std::string term = matches[i];
    if (ground_truth.find(term) != std::string_view::npos && term != ground_truth)
      matches.erase(std::find(matches.begin(), matches.end(), term));
  }
  if (std::find(matches.begin(), matches.end(), ground_truth) == matches.end()) return 0.0;
  return 1.0 / static_cast<double>(matches.size());
}

double count_score(std::string_view prediction, std::string_view ground_truth) {
  return share_of_equal_numbers(prediction, ground_truth);
}

double retrieval_score(std::string_view prediction, std::string_view ground_truth) {
  return share_of_equal_numbers(prediction, paragraph_id(ground_truth, "Paragraph "));
}

double retrieval_zh_score(std::string_view prediction, std::string_view ground_truth) {
  return share_of_equal_numbers(prediction, paragraph_id(ground_truth, "段落"));
}

int fuzz_ratio(std::string_view a, std::string_view b) {
  if (a == b) return 100;             // utils.check_for_equivalence
  if (a.empty() || b.empty()) return 0;  // utils.check_empty_string
  const std::u32string x = py::decode_utf8(a), y = py::decode_utf8(b);
  const size_t lensum = x.size() + y.size();
  const size_t indel_distance = lensum - 2 * lcs_length(x, y);
  const double ratio = static_cast<double>(lensum - indel_distance) / static_cast<double>(lensum);
  return static_cast<int>(std::nearbyint(100 * ratio));  // Python round(): ties to even
}

double code_sim_score(std::string_view prediction, std::string_view ground_truth) {
  const size_t start = prediction.find_first_not_of('\n');
  prediction = start == std::string_view::npos ? std::string_view() : prediction.substr(start);
  std::string_view chosen;
  while (true) {
    const size_t end = prediction.find('\n');
    const std::string_view line = prediction.substr(0, end);
    if (line.find('`') == std::string_view::npos && line.find('#') == std::string_view::npos &&
        line.find("//") == std::string_view::npos) {
      chosen = line;
      break;
    }
    if (end == std::string_view::npos) break;
    prediction.remove_prefix(end + 1);
  }
  return fuzz_ratio(chosen, ground_truth) / 100.0;
}

LongBenchMetric longbench_metric(std::string_view dataset) {
  static const std::map<std::string, LongBenchMetric, std::less<>> kTable = {
      {"narrativeqa", LongBenchMetric::qa_f1},          {"qasper", LongBenchMetric::qa_f1},
      {"multifieldqa_en", LongBenchMetric::qa_f1},      {"hotpotqa", LongBenchMetric::qa_f1},
      {"2wikimqa", LongBenchMetric::qa_f1},             {"musique", LongBenchMetric::qa_f1},
      {"gov_report", LongBenchMetric::rouge},           {"qmsum", LongBenchMetric::rouge},
      {"multi_news", LongBenchMetric::rouge},           {"trec", LongBenchMetric::classification},
      {"triviaqa", LongBenchMetric::qa_f1},             {"samsum", LongBenchMetric::rouge},
      {"lsht", LongBenchMetric::classification},        {"passage_retrieval_en", LongBenchMetric::retrieval},
      {"passage_count", LongBenchMetric::count},        {"passage_retrieval_zh", LongBenchMetric::retrieval_zh},
      {"lcc", LongBenchMetric::code_sim},               {"repobench-p", LongBenchMetric::code_sim},
  };
  static const std::map<std::string, const char*, std::less<>> kNeedSegmenter = {
      {"multifieldqa_zh", "qa_f1_zh_score"}, {"dureader", "rouge_zh_score"}, {"vcsum", "rouge_zh_score"}};
  if (auto it = kTable.find(dataset); it != kTable.end()) return it->second;
  if (auto it = kNeedSegmenter.find(dataset); it != kNeedSegmenter.end())
    fail("LongBench dataset '{}' is scored with {}, which segments Chinese text with jieba; momentkv "
         "has no Chinese word segmenter, so '{}' cannot be scored",
         dataset, it->second, dataset);
  fail("unknown LongBench dataset '{}' (no metric in LongBench v1 eval.py)", dataset);
}

const char* metric_name(LongBenchMetric metric) {
  switch (metric) {
    case LongBenchMetric::qa_f1: return "qa_f1_score";
    case LongBenchMetric::rouge: return "rouge_score";
    case LongBenchMetric::classification: return "classification_score";
    case LongBenchMetric::count: return "count_score";
    case LongBenchMetric::retrieval: return "retrieval_score";
    case LongBenchMetric::retrieval_zh: return "retrieval_zh_score";
    case LongBenchMetric::code_sim: return "code_sim_score";
  }
  return "?";
}

bool scores_first_line_only(std::string_view dataset) {
  return dataset == "trec" || dataset == "triviaqa" || dataset == "samsum" || dataset == "lsht";
}

double longbench_sample_score(std::string_view dataset, const LongBenchPrediction& prediction) {
  const LongBenchMetric metric = longbench_metric(dataset);
  const std::string_view pred =
      scores_first_line_only(dataset) ? py::first_line(prediction.pred) : std::string_view(prediction.pred);
  double best = 0.0;
  for (const auto& gold : prediction.answers) {
    double score = 0.0;
    switch (metric) {
      case LongBenchMetric::qa_f1: score = qa_f1_score(pred, gold); break;
      case LongBenchMetric::rouge: score = rouge_l_score(pred, gold); break;
      case LongBenchMetric::classification: score = classification_score(pred, gold, prediction.all_classes); break;
      case LongBenchMetric::count: score = count_score(pred, gold); break;
      case LongBenchMetric::retrieval: score = retrieval_score(pred, gold); break;
      case LongBenchMetric::retrieval_zh: score = retrieval_zh_score(pred, gold); break;
      case LongBenchMetric::code_sim: score = code_sim_score(pred, gold); break;
    }
    best = std::max(best, score);
  }
  return best;
}

double longbench_mean_score(const std::vector<double>& sample_scores) {
  double total = 0.0;
  for (double s : sample_scores) total += s;
  return py::round2(100 * total / static_cast<double>(sample_scores.size()));
}

double longbench_dataset_score(std::string_view dataset, const std::vector<LongBenchPrediction>& predictions) {
  MKV_CHECK(!predictions.empty(), "no predictions to score for LongBench dataset '{}'", dataset);
  std::vector<double> scores;
  for (const auto& prediction : predictions) scores.push_back(longbench_sample_score(dataset, prediction));
  return longbench_mean_score(scores);
}

std::map<std::string, double> longbench_e_scores(std::string_view dataset,
                                                 const std::vector<LongBenchPrediction>& predictions) {
  std::map<std::string, std::vector<double>> buckets;
  for (const auto& prediction : predictions) {
    const char* bucket = prediction.length < 4000 ? "0-4k" : prediction.length < 8000 ? "4-8k" : "8k+";
    buckets[bucket].push_back(longbench_sample_score(dataset, prediction));
  }
  std::map<std::string, double> scores;
  for (const auto& [bucket, values] : buckets) {
    double sum = 0.0;  // numpy.mean sums pairwise: may differ from this in the last bit
    for (double v : values) sum += v;
    scores[bucket] = py::round2(100 * (sum / static_cast<double>(values.size())));
  }
  return scores;
}

}  // namespace mkv::eval
