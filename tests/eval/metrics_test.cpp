// Hand-computed cases for every LongBench and RULER metric (see comments for the arithmetic).
#include <gtest/gtest.h>

#include "core/error.h"
#include "eval/metrics/longbench_metrics.h"
#include "eval/metrics/python_text.h"
#include "eval/metrics/ruler_metrics.h"

namespace mkv::eval {
namespace {

TEST(NormalizeAnswer, LowersDropsPunctuationArticlesAndSpaces) {
  EXPECT_EQ(normalize_answer("The Cat, the HAT!"), "cat hat");
  EXPECT_EQ(normalize_answer("An apple a  day"), "apple day");
  EXPECT_EQ(normalize_answer("theater and anchor"), "theater and anchor");  // articles only as words
  EXPECT_EQ(normalize_answer("a-b"), "ab");                                 // '-' removed first
  EXPECT_EQ(normalize_answer("  "), "");
}

TEST(NormalizeAnswer, Unicode) {
  EXPECT_EQ(normalize_answer("ÉCOLE Ünïcode"), "école ünïcode");  // Latin-1 lower-cased
  EXPECT_EQ(normalize_answer("aé the"), "aé");                   // é is a word character: no \b after 'a'
  EXPECT_EQ(normalize_answer("“a” test"), "“ ” test");         // curly quotes are kept, not word chars
  EXPECT_EQ(normalize_answer("ΑΘΗΝΑ"), "αθηνα");
}

TEST(QaF1, TokenOverlap) {
  // pred {cat, sat}, gold {cat, sat, down}: P = 1, R = 2/3, F1 = (4/3)/(5/3) = 0.8
  EXPECT_DOUBLE_EQ(qa_f1_score("The cat sat.", "cat sat down"), 0.8);
  // repeated tokens count once per gold occurrence: common = 1, P = 1/3, R = 1/2, F1 = 0.4
  EXPECT_DOUBLE_EQ(qa_f1_score("cat cat cat", "cat dog"), 0.4);
  EXPECT_DOUBLE_EQ(qa_f1_score("", "cat"), 0.0);
  EXPECT_DOUBLE_EQ(qa_f1_score("cat", ""), 0.0);
  EXPECT_DOUBLE_EQ(qa_f1_score("!!!", "!!!"), 0.0);  // both normalise to nothing
  EXPECT_DOUBLE_EQ(qa_f1_score("The Eiffel Tower", "eiffel tower"), 1.0);
}

TEST(RougeL, SetBasedSummaryLevelLcs) {
  // ref words {the, mat, sat, on, cat} (m = 5), hyp the same set (n = 5); LCS "the sat on the" = set
  // {the, sat, on}: llcs = 3, P = R = 0.6.
  EXPECT_DOUBLE_EQ(rouge_l_score("the cat sat on the mat", "the mat sat on the cat"),
                   2.0 * ((0.6 * 0.6) / (0.6 + 0.6 + 1e-8)));
  // fully reordered: LCS is one word, P = R = 1/4
  EXPECT_DOUBLE_EQ(rouge_l_score("a b c d", "d c b a"), 2.0 * ((0.25 * 0.25) / (0.5 + 1e-8)));
  // sentences split at '.': union over ref sentences {the, dog} ∪ {cat} = 3; m = 4, n = 3
  EXPECT_DOUBLE_EQ(rouge_l_score("the cat. the dog", "the dog. a cat"), 2.0 * ((1.0 * 0.75) / (1.75 + 1e-8)));
  // "Hello. " → sentences ["Hello", ""]: the empty word counts (n = 2), P = 1/2, R = 1
  EXPECT_DOUBLE_EQ(rouge_l_score("Hello. ", "Hello"), 2.0 * ((0.5 * 1.0) / (1.5 + 1e-8)));
  EXPECT_DOUBLE_EQ(rouge_l_score("", "the cat"), 0.0);    // Rouge raises, LongBench scores 0
  EXPECT_DOUBLE_EQ(rouge_l_score("...", "the cat"), 0.0);
  EXPECT_DOUBLE_EQ(rouge_l_score("the cat", ""), 0.0);
}

TEST(Classification, MatchesAndQuirks) {
  const std::vector<std::string> classes = {"Abbreviation", "Entity", "Location", "Description"};
  EXPECT_DOUBLE_EQ(classification_score("Location", "Location", classes), 1.0);
  EXPECT_DOUBLE_EQ(classification_score("Entity or Location", "Location", classes), 0.5);
  EXPECT_DOUBLE_EQ(classification_score("no idea", "Location", classes), 0.0);  // no difflib fallback
  // "York" is a substring of the gold "New York" and is dropped.
  EXPECT_DOUBLE_EQ(classification_score("New York", "New York", {"New York", "York"}), 1.0);
  // matches [a, b, abc]: removing "a" makes the loop skip "b", which stays: 1/2.
  EXPECT_DOUBLE_EQ(classification_score("abc", "abc", {"a", "b", "abc"}), 0.5);
}

TEST(CountAndRetrieval, ShareOfMatchingNumbers) {
  EXPECT_DOUBLE_EQ(count_score("There are 3 paragraphs, not 30 or 3", "3"), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(count_score("none", "3"), 0.0);
  EXPECT_DOUBLE_EQ(count_score("03", "3"), 0.0);  // string comparison
  EXPECT_DOUBLE_EQ(retrieval_score("Paragraph 12", "Paragraph 12"), 1.0);
  EXPECT_DOUBLE_EQ(retrieval_score("Paragraph 12 and Paragraph 3", "Paragraph 12"), 0.5);
  EXPECT_DOUBLE_EQ(retrieval_zh_score("答案是段落5", "段落5"), 1.0);
  EXPECT_THROW(retrieval_score("12", "no paragraph here"), MkvError);
}

TEST(CodeSim, FuzzRatioAsPythonLevenshtein) {
  EXPECT_EQ(fuzz_ratio("abc", "axc"), 67);                // 2·2/6 = 66.67
  EXPECT_EQ(fuzz_ratio("a", "abbbbbbbbbbbbbbb"), 12);     // 2·1/17 = 11.76
  EXPECT_EQ(fuzz_ratio("a", "abbbbbbbbbbbbbb"), 12);      // 2·1/16 = 12.5 → ties to even
  EXPECT_EQ(fuzz_ratio("abc", "abcxxxxxxxxxx"), 38);      // 2·3/16 = 37.5 → 38
  EXPECT_EQ(fuzz_ratio("café", "cafe"), 75);              // code points: 2·3/8
  EXPECT_EQ(fuzz_ratio("", ""), 100);
  EXPECT_EQ(fuzz_ratio("", "x"), 0);
  // first line without ` # //
  EXPECT_DOUBLE_EQ(code_sim_score("\n```python\nx = 1\n", "x = 1"), 1.0);
  EXPECT_DOUBLE_EQ(code_sim_score("# comment\n// c\n", "x"), 0.0);
  EXPECT_DOUBLE_EQ(code_sim_score("abc", "axc"), 0.67);
}

TEST(LongBench, DatasetTableAndRules) {
  EXPECT_EQ(longbench_metric("hotpotqa"), LongBenchMetric::qa_f1);
  EXPECT_EQ(longbench_metric("lsht"), LongBenchMetric::classification);
  EXPECT_EQ(longbench_metric("repobench-p"), LongBenchMetric::code_sim);
  try {
    longbench_metric("dureader");
    FAIL() << "dureader must be refused";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("dureader"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("jieba"), std::string::npos);
  }
  EXPECT_THROW(longbench_metric("nope"), MkvError);
  EXPECT_TRUE(scores_first_line_only("samsum"));
  EXPECT_FALSE(scores_first_line_only("qmsum"));

  // max over gold answers
  LongBenchPrediction p{"the cat sat", {"dog", "cat sat down"}, {}, 100};
  EXPECT_DOUBLE_EQ(longbench_sample_score("hotpotqa", p), 0.8);
  // triviaqa: only "Paris" (first line) is scored
  LongBenchPrediction q{"\nParis\nLondon", {"London"}, {}, 5000};
  EXPECT_DOUBLE_EQ(longbench_sample_score("triviaqa", q), 0.0);
  EXPECT_DOUBLE_EQ(longbench_sample_score("hotpotqa", q), 2 * 0.5 * 1.0 / 1.5);
  // (0.8 + 0 + 1) / 3 · 100 = 60
  LongBenchPrediction r{"London", {"London"}, {}, 9000};
  EXPECT_DOUBLE_EQ(longbench_dataset_score("triviaqa", {p, q, r}), py::round2(100 * (0.8 + 0 + 1) / 3));
  EXPECT_DOUBLE_EQ(longbench_dataset_score("hotpotqa", {p}), 80.0);
  const auto buckets = longbench_e_scores("triviaqa", {p, q, r});
  EXPECT_DOUBLE_EQ(buckets.at("0-4k"), 80.0);
  EXPECT_DOUBLE_EQ(buckets.at("4-8k"), 0.0);
  EXPECT_DOUBLE_EQ(buckets.at("8k+"), 100.0);
  EXPECT_THROW(longbench_dataset_score("hotpotqa", {}), MkvError);
}

TEST(PythonText, Helpers) {
  EXPECT_DOUBLE_EQ(py::round2(0.125), 0.12);   // exact binary tie → even
  EXPECT_DOUBLE_EQ(py::round2(2.675), 2.67);   // 2.675 is below the tie in binary
  EXPECT_DOUBLE_EQ(py::round2(66.666666), 66.67);
  EXPECT_EQ(py::first_line("\n\nabc\ndef"), "abc");
  EXPECT_EQ(py::first_line("\n\n"), "");
  EXPECT_EQ(py::split_whitespace("a\u00a0b\u3000c \t").size(), 3u);
  EXPECT_EQ(py::strip("\u3000 x \n"), "x");
  EXPECT_EQ(py::find_digit_runs("a12b３4"), (std::vector<std::string>{"12", "３4"}));
  EXPECT_EQ(py::decode_utf8("\xff" "a"), std::u32string(U"\uFFFDa"));
}

TEST(Ruler, StringMatch) {
  // 2 of 3 references contained, case-insensitively
  EXPECT_DOUBLE_EQ(string_match_all("The answer is 123 and ABC", {"123", "abc", "xyz"}), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(string_match_part("The answer is 123 and ABC", {"123", "abc", "xyz"}), 1.0);
  EXPECT_DOUBLE_EQ(string_match_part("nothing", {"123"}), 0.0);
  EXPECT_DOUBLE_EQ(string_match_all("L'ÉCOLE", {"école"}), 1.0);
  EXPECT_EQ(ruler_postprocess("  abc\x01" "def\t "), "abc\ndef");
  EXPECT_EQ(ruler_postprocess("\x02\x03"), "");
  EXPECT_EQ(ruler_metric("qa_2"), RulerMetric::string_match_part);
  EXPECT_EQ(ruler_metric("niah_single_1"), RulerMetric::string_match_all);

  // (1 + 0 + 0.5) / 3 · 100 = 50; the second prediction is empty after post-processing
  const auto score = ruler_task_score("vt", {"123", "\x01", "a"}, {{"123"}, {"4"}, {"a", "b"}});
  EXPECT_DOUBLE_EQ(score.score, 50.0);
  EXPECT_EQ(score.nulls, 1);
  EXPECT_EQ(score.n, 3);
  EXPECT_DOUBLE_EQ(ruler_task_score("qa_1", {"x b"}, {{"a", "b"}}).score, 100.0);
  EXPECT_THROW(ruler_task_score("vt", {"a"}, {}), MkvError);
}

}  // namespace
}  // namespace mkv::eval
