// LongBench v1 metrics, reproducing THUDM/LongBench `metrics.py` and `eval.py` line by line.
//
// Every per-answer metric returns a value in [0, 1]; dataset scores are 100 × mean, rounded to 2
// decimals like Python's round(x, 2). Text is UTF-8 and handled as Python code points (see
// python_text.h for the exact Unicode coverage of lower-casing, whitespace and \b, \d).
//
// Faithfulness notes (deliberate, to match published numbers):
// - classification_score keeps LongBench's quirks: it drops matches that are substrings of the gold
//   while iterating the same list (so the element after a dropped one is not examined), and its
//   difflib fallback is unreachable (`em_match_list != 0` is always true), so no match scores 0.
// - rouge_l_score is the `rouge` package (pltrdy/rouge 1.0.x) ROUGE-L F as LongBench calls it:
//   text split into sentences at every '.', words split on ' ', summary-level union LCS with
//   exclusive=True (words counted as sets), F = 2PR / (P + R + 1e-8); an empty hypothesis or
//   reference (no non-empty piece between dots) scores 0, as LongBench's try/except does. One
//   divergence: Python hits its recursion limit (≈1000) reconstructing the LCS of a sentence pair
//   with more than ≈1000 words in total and LongBench then scores 0; we compute the score.
// - code_sim_score uses fuzz.ratio as fuzzywuzzy 0.18.0 computes it with python-Levenshtein
//   installed (the Debian python3-fuzzywuzzy package depends on it, and it is what fuzzywuzzy
//   prefers): round-half-even(100 · (|a| + |b| − indel_distance) / (|a| + |b|)) over code points,
//   i.e. 2·LCS/(|a|+|b|); equal strings give 100, one empty string gives 0. Without
//   python-Levenshtein fuzzywuzzy falls back to difflib.SequenceMatcher, whose matching-block
//   heuristic (and autojunk for strings ≥ 200 characters) can report fewer matches.
// - Chinese variants needing the jieba segmenter (qa_f1_zh, rouge_zh: multifieldqa_zh, dureader,
//   vcsum) are refused with MkvError; lsht (classification) and passage_retrieval_zh need none.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mkv::eval {

// normalize_answer: lower, drop ASCII punctuation, drop the articles a/an/the, squash whitespace.
std::string normalize_answer(std::string_view text);

double qa_f1_score(std::string_view prediction, std::string_view ground_truth);
double rouge_l_score(std::string_view prediction, std::string_view ground_truth);
double classification_score(std::string_view prediction, std::string_view ground_truth,
                            const std::vector<std::string>& all_classes);
double count_score(std::string_view prediction, std::string_view ground_truth);
double retrieval_score(std::string_view prediction, std::string_view ground_truth);     // "Paragraph N"
double retrieval_zh_score(std::string_view prediction, std::string_view ground_truth);  // "段落N"
double code_sim_score(std::string_view prediction, std::string_view ground_truth);

// fuzzywuzzy fuzz.ratio (python-Levenshtein backend), an integer in [0, 100].
int fuzz_ratio(std::string_view a, std::string_view b);

enum class LongBenchMetric { qa_f1, rouge, classification, count, retrieval, retrieval_zh, code_sim };

// The metric of a LongBench v1 dataset (eval.py's dataset2metric); MkvError for an unknown dataset
// or one whose metric needs a Chinese word segmenter.
LongBenchMetric longbench_metric(std::string_view dataset);
const char* metric_name(LongBenchMetric metric);

// trec, triviaqa, samsum, lsht: only the first line of the prediction is scored.
bool scores_first_line_only(std::string_view dataset);

struct LongBenchPrediction {
  std::string pred;
  std::vector<std::string> answers;
  std::vector<std::string> all_classes;
  int64_t length = 0;  // LongBench-E bucket key (words or characters, as in the data row)
};

// Max over gold answers of the dataset's metric (after the first-line rule), in [0, 1].
double longbench_sample_score(std::string_view dataset, const LongBenchPrediction& prediction);

// round(100 · Σ score / n, 2) of per-sample scores summed in the order given (eval.py's scorer):
// shards merged in index order give the unsharded score exactly (report::merge_records).
double longbench_mean_score(const std::vector<double>& sample_scores);

// eval.py scorer: round(100 · Σ score / n, 2). MkvError if `predictions` is empty.
double longbench_dataset_score(std::string_view dataset,
                               const std::vector<LongBenchPrediction>& predictions);

// eval.py scorer_e: the same per bucket "0-4k" (< 4000), "4-8k" (< 8000), "8k+"; an empty bucket
// is absent (numpy would report nan).
std::map<std::string, double> longbench_e_scores(std::string_view dataset,
                                                 const std::vector<LongBenchPrediction>& predictions);

}  // namespace mkv::eval
