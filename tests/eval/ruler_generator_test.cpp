#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "eval/metrics/python_text.h"
#include "eval/ruler/haystack.h"
#include "eval/ruler/ruler_generator.h"
#include "support/test_support.h"

namespace mkv::eval::ruler {
namespace {

int64_t whitespace_tokens(std::string_view text) { return static_cast<int64_t>(py::split_whitespace(text).size()); }

std::filesystem::path essay_file() {
  if (auto assets = test::shared_assets(); assets && std::filesystem::exists(*assets / "text/frankenstein.txt"))
    return *assets / "text/frankenstein.txt";
  const auto path = test::temp_dir() / "essay.txt";
  std::ofstream out(path);
  for (int i = 0; i < 400; ++i) out << "Sentence number " << i << " talks about the weather. Mr. Smith agrees! ";
  return path;
}

RulerConfig config(const std::string& task, uint64_t seed = 42, int64_t length = 1024) {
  RulerConfig c;
  c.task = task;
  c.max_seq_length = length;
  c.num_samples = 3;
  c.seed = seed;
  c.essay_paths = {essay_file()};
  c.count_tokens = whitespace_tokens;
  return c;
}

const std::vector<std::string> kGeneratedTasks = {"niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1",
                                                  "niah_multikey_2", "niah_multikey_3", "niah_multivalue",
                                                  "niah_multiquery", "vt", "cwe", "fwe"};

std::vector<std::string> lines(const std::vector<RulerSample>& samples) {
  std::vector<std::string> out;
  for (const auto& s : samples) out.push_back(to_jsonl_line(s));
  return out;
}

TEST(SeededRng, FixedDerivation) {
  // mt19937_64 and splitmix64 are fully specified: these values hold on every platform.
  SeededRng rng(42, "niah_single_1", 0);
  SeededRng same(42, "niah_single_1", 0);
  SeededRng other(42, "niah_single_1", 1);
  const uint64_t first = rng.next();
  EXPECT_EQ(first, same.next());
  EXPECT_NE(first, other.next());
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(fnv1a64("a"), 0xAF63DC4C8601EC8CULL);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(rng.below(7), 7u);
  const auto picked = rng.sample_indices(40, 40);
  EXPECT_EQ(std::set<size_t>(picked.begin(), picked.end()).size(), 40u);
}

TEST(RulerGenerator, SameSeedSameBytesOtherSeedDiffers) {
  for (const auto& task : kGeneratedTasks) {
    SCOPED_TRACE(task);
    const auto a = lines(RulerGenerator(config(task)).generate());
    const auto b = lines(RulerGenerator(config(task)).generate());
    const auto c = lines(RulerGenerator(config(task, 7)).generate());
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_NE(a[0], a[1]);  // samples are distinct streams
  }
}

TEST(RulerGenerator, FitIsTheLargestHaystackThatFits) {
  for (const auto& task : kGeneratedTasks) {
    SCOPED_TRACE(task);
    const RulerGenerator generator(config(task, 42, 2000));
    const HaystackFit fit = generator.fit();
    EXPECT_LE(fit.length, 2000);
    EXPECT_GT(generator.probe_length(fit.haystack_size + 1), 2000);
    for (const auto& sample : generator.generate()) {
      EXPECT_LE(sample.length, 2000);
      EXPECT_EQ(sample.length, whitespace_tokens(sample.input + sample.answer_prefix) + generator.spec().tokens_to_generate);
    }
  }
}

TEST(RulerGenerator, AnswersAppearInTheInput) {
  for (const auto& task : kGeneratedTasks) {
    SCOPED_TRACE(task);
    for (const auto& sample : RulerGenerator(config(task)).generate()) {
      ASSERT_FALSE(sample.outputs.empty());
      for (const auto& output : sample.outputs) EXPECT_NE(sample.input.find(output), std::string::npos) << output;
      EXPECT_FALSE(sample.answer_prefix.empty());
    }
  }
}

TEST(RulerGenerator, TemplatesFollowRuler) {
  const RulerSample single = RulerGenerator(config("niah_single_1")).sample(0, 20);
  EXPECT_TRUE(single.input.starts_with("A special magic number is hidden within the following text."));
  EXPECT_EQ(single.answer_prefix.rfind(" The special magic number for ", 0), 0u);
  EXPECT_TRUE(single.answer_prefix.ends_with(" mentioned in the provided text is"));
  const RulerSample multi = RulerGenerator(config("niah_multivalue")).sample(0, 500);
  EXPECT_TRUE(multi.input.starts_with("Some special magic numbers are hidden"));
  EXPECT_EQ(multi.outputs.size(), 4u);
  const RulerSample query = RulerGenerator(config("niah_multiquery")).sample(0, 500);
  EXPECT_NE(query.input.find(", and "), std::string::npos);
  const RulerSample vt = RulerGenerator(config("vt")).sample(0, 20);
  EXPECT_NE(vt.input.find("they are:  "), std::string::npos);  // the in-context example's answer
  EXPECT_EQ(vt.outputs.size(), 5u);
  const RulerSample fwe = RulerGenerator(config("fwe")).sample(0, 500);
  EXPECT_NE(fwe.input.find("... "), std::string::npos);
}

// Lines of the context (between the first line of the template and the question).
std::vector<std::string> context_lines(const std::string& input) {
  std::vector<std::string> out;
  size_t start = input.find('\n') + 1;
  while (true) {
    const size_t end = input.find('\n', start);
    if (end == std::string::npos) break;
    out.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

TEST(RulerGenerator, LineHaystackNeedleSitsAtItsDepth) {
  for (const std::string task : {"niah_single_1", "niah_multikey_2", "niah_multikey_3"}) {
    SCOPED_TRACE(task);
    const RulerGenerator generator(config(task));
    for (int64_t index = 0; index < 10; ++index) {
      const RulerSample s = generator.sample(index, 37);
      const auto ctx = context_lines(s.input);
      ASSERT_EQ(ctx.size(), 38u);  // 37 haystack sentences + 1 needle
      const int depth = s.others["depths"][0];
      size_t line = 0;
      while (line < ctx.size() && ctx[line].find("is: " + s.outputs[0] + ".") == std::string::npos) ++line;
      ASSERT_LT(line, ctx.size());
      EXPECT_EQ(static_cast<int64_t>(line), static_cast<int64_t>(37 * (depth / 100.0)));
    }
  }
}

TEST(RulerGenerator, EssayNeedlesSitAtTheirDepths) {
  const RulerGenerator generator(config("niah_multivalue"));
  const auto words = load_essay_words({essay_file()});
  const auto sentences = split_sentences(essay_prefix(words, 600));
  const RulerSample s = generator.sample(3, 600);
  const auto& depths = s.others["depths"];
  ASSERT_EQ(depths.size(), 4u);
  std::vector<size_t> needle_starts;
  for (const auto& value : s.outputs) {
    const size_t at = s.input.find("is: " + value + ".");
    ASSERT_NE(at, std::string::npos);
    needle_starts.push_back(s.input.rfind("One of the special magic", at));
  }
  std::sort(needle_starts.begin(), needle_starts.end());
  for (size_t k = 0; k < 4; ++k) {
    const auto position = static_cast<size_t>(static_cast<double>(sentences.size()) * (depths[k].get<int>() / 100.0));
    const std::string before = s.input.substr(0, needle_starts[k]);
    if (position > 0 && (k == 0 || depths[k - 1] != depths[k])) {
      EXPECT_TRUE(before.ends_with(sentences[position - 1] + " ")) << "needle " << k << " depth " << depths[k];
    }
    // essay sentences before the needle = position
    size_t count = 0;
    for (size_t i = 0; i < sentences.size() && before.find(sentences[i]) != std::string::npos; ++i) count = i + 1;
    EXPECT_EQ(count, position) << "needle " << k;
  }
}

TEST(RulerGenerator, RefusesWhatItCannotDo) {
  EXPECT_THROW(RulerGenerator{config("qa_1")}, MkvError);
  EXPECT_THROW(RulerGenerator{config("niah_single_9")}, MkvError);
  EXPECT_THROW(RulerGenerator{config("niah_single_1", 42, 100)}, MkvError);  // smaller than 128 generated tokens
  RulerConfig missing = config("niah_single_2");
  missing.essay_paths = {"/nonexistent/essay.txt"};
  EXPECT_THROW(RulerGenerator{missing}, MkvError);
}

TEST(RulerJsonl, RoundTripAndExternalFile) {
  const auto samples = RulerGenerator(config("vt")).generate();
  const auto path = write_validation_jsonl(test::temp_dir(), "vt", samples);
  EXPECT_EQ(path.filename(), "validation.jsonl");
  EXPECT_EQ(path.parent_path().filename(), "vt");
  EXPECT_EQ(lines(read_ruler_jsonl(path)), lines(samples));

  MKV_REQUIRE_ASSET(external, "eval/ruler_4096_niah_multikey_3.jsonl");
  const auto rows = read_ruler_jsonl(external);
  ASSERT_EQ(rows.size(), 500u);
  EXPECT_EQ(rows[0].outputs.size(), 1u);
  EXPECT_NE(rows[0].input.find(rows[0].outputs[0]), std::string::npos);
  EXPECT_TRUE(rows[0].answer_prefix.empty());
}

TEST(RulerJsonl, MalformedRowsNameLineAndField) {
  const auto expect_error = [](const std::string& content, const std::string& needle) {
    const auto path = test::temp_dir() / "bad.jsonl";
    std::ofstream(path) << content;
    try {
      read_ruler_jsonl(path);
      ADD_FAILURE() << "no error for " << content;
    } catch (const MkvError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string good = R"({"index": 0, "input": "x", "outputs": ["a"], "length": 3})";
  expect_error(good + "\n" + R"({"index": 1, "input": "x"})" + "\n", ":2: missing field 'outputs'");
  expect_error(good + "\n\n" + "{not json\n", ":3: not valid JSON");
  expect_error(R"({"index": "0", "input": "x", "outputs": ["a"]})", ":1: field 'index' must be an integer");
  expect_error(R"({"index": 0, "input": "x", "outputs": [1]})", "'outputs' must hold strings");
  expect_error(R"({"index": 0, "input": "x", "outputs": []})", "'outputs' must be a non-empty array");
}

}  // namespace
}  // namespace mkv::eval::ruler
