// Evaluation runners on stories260K: attention fidelity (structural properties), RULER and
// LongBench runs (layout, resume = uninterrupted run, shards), row errors with line numbers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "eval/compression_eval.h"
#include "eval/fidelity.h"
#include "eval/held_out.h"
#include "eval/longbench/longbench_eval.h"
#include "eval/ruler/ruler_eval.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;

class EvalRunnerStories : public ::testing::Test {
 protected:
  void SetUp() override {
    auto assets = test::shared_assets();
    if (!assets || !fs::exists(*assets / "stories260K.gguf")) GTEST_SKIP() << "stories260K.gguf not found";
    assets_ = *assets;
    file_ = std::make_unique<GgufFile>(GgufFile::open((assets_ / "stories260K.gguf").string()));
    model_ = std::make_unique<Transformer>(*file_, 512);
    tokenizer_ = Tokenizer::create(Vocab::from_gguf(*file_));
  }
  fs::path assets_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

std::string slurp(const fs::path& p) { return test::read_file(p); }

TEST_F(EvalRunnerStories, FidelityStructure) {
  const std::string text = slurp(assets_ / "text/tinystories_val.txt");
  FidelityConfig config;
  config.presses = {PressConfig::parse("streaming_llm"), PressConfig::parse("snapkv"), PressConfig::parse("momentkv")};
  config.budgets = {16, 64};
  config.prompt_tokens = 448;
  config.continuation_tokens = 64;
  const auto tokens = tokenizer_->encode(text, false, false);
  const auto held_out = held_out_windows(tokens, tokenizer_->vocab().bos, 448 + 64 + 1, 1, TextSplit::First, 1);
  ASSERT_EQ(held_out.size(), 1u);
  const std::vector<std::vector<int32_t>> windows = {held_out.front().tokens};
  const auto rows = run_fidelity(*model_, windows, config);
  ASSERT_EQ(rows.size(), 6u);
  const int n_heads = model_->config().n_heads * model_->config().n_layers;
  for (const auto& r : rows) {
    ASSERT_EQ(static_cast<int>(r.heads.size()), n_heads);
    for (const auto& h : r.heads) {
      EXPECT_GE(h.evicted_mass, 0.0);
      EXPECT_LE(h.evicted_mass, 1.0);
      EXPECT_GE(h.cosine, -1.0);
      EXPECT_LE(h.cosine, 1.0);
      EXPECT_GE(h.error_plain, 0.0);
      EXPECT_TRUE(std::isfinite(h.error_nc));
      EXPECT_EQ(h.queries, 64);
    }
    EXPECT_GT(r.evicted_mass, 0.0) << r.name << " L=" << r.budget;  // 448 tokens > every budget
    EXPECT_TRUE(r.has_output);
    EXPECT_EQ(r.output_nc_off.positions(), 64);
    EXPECT_GE(r.output_nc_off.mean_kl(), 0.0);
  }
  // A smaller budget evicts more mass.
  EXPECT_GT(rows[2].evicted_mass, rows[3].evicted_mass);  // snapkv 16 vs 64
  // NC recovers part of the error on average (snapkv, L = 16).
  EXPECT_EQ(rows[2].name, "snapkv");
  EXPECT_EQ(rows[2].budget, 16);
  EXPECT_LE(rows[2].error_nc, rows[2].error_plain);

  const auto json = fidelity_json(rows, config);
  EXPECT_EQ(json["rows"].size(), 6u);
  EXPECT_TRUE(json["rows"][0].contains("output_nc_on"));
  const auto plots = fidelity_plots(rows);
  ASSERT_GE(plots.size(), 4u);
  for (const auto& [name, svg] : plots) EXPECT_NE(svg.find("<svg"), std::string::npos) << name;
  EXPECT_NE(fidelity_markdown(rows, config, "stories260K", 1).find("| snapkv | 16 |"), std::string::npos);
}

TEST(Fidelity, RejectsBudgetInSpec) {
  auto assets = test::shared_assets();
  if (!assets || !fs::exists(*assets / "stories260K.gguf")) GTEST_SKIP();
  auto file = GgufFile::open((*assets / "stories260K.gguf").string());
  Transformer model(file, 64);
  FidelityConfig config;
  config.presses = {PressConfig::parse("snapkv:budget=3")};
  config.budgets = {16};
  config.prompt_tokens = 32;
  config.continuation_tokens = 8;
  config.model_output = false;
  std::vector<std::vector<int32_t>> windows{std::vector<int32_t>(41, 1)};
  EXPECT_THROW(run_fidelity(model, windows, config), MkvError);
}

TEST(RulerSplit, QuestionIsTheLastLine) {
  EXPECT_EQ(eval::ruler_question_start("ctx\nmore\nWhat is it?\n"), 9u);
  EXPECT_EQ(eval::ruler_question_start("no newline"), std::string::npos);
}

eval::RulerEvalConfig tiny_ruler(const fs::path& assets, const fs::path& out) {
  eval::RulerEvalConfig c;
  c.tasks = {"niah_single_1"};
  c.length = 1024;  // stories260K's tokenizer is near character level: the template alone is ~400 tokens
  c.samples = 2;
  c.session.n_ctx = 1024;
  c.seed = 7;
  c.essays = {assets / "text/frankenstein.txt"};
  c.settings = eval::expand_press_settings({PressConfig(), PressConfig::parse("snapkv")}, {64});
  c.output_dir = out;
  c.model_name = "stories260K";
  return c;
}

std::string pred_file(const fs::path& run, const std::string& task) { return slurp(run / "pred" / (task + ".jsonl")); }

TEST_F(EvalRunnerStories, RulerRunLayoutAndResume) {
  const fs::path dir = test::temp_dir();
  std::ostringstream log;
  // Uninterrupted.
  auto full = tiny_ruler(assets_, dir / "a");
  const auto s1 = eval::run_ruler_eval(*model_, *tokenizer_, full, log);
  EXPECT_EQ(s1.predicted, 4);
  EXPECT_FALSE(s1.stopped_early);
  ASSERT_TRUE(fs::exists(dir / "a/data/niah_single_1/validation.jsonl"));
  for (const char* run : {"full", "snapkv_L64"}) {
    const fs::path r = dir / "a" / run;
    ASSERT_TRUE(fs::exists(r / "summary.csv")) << run;
    ASSERT_TRUE(fs::exists(r / "run.json")) << run;
    const std::string summary = slurp(r / "summary.csv");
    EXPECT_EQ(summary.rfind("Tasks,niah_single_1\nScore,", 0), 0u) << summary;
    EXPECT_NE(summary.find("Nulls,"), std::string::npos);
    std::istringstream in(pred_file(r, "niah_single_1"));
    int lines = 0;
    for (std::string line; std::getline(in, line); ++lines) {
      const auto row = nlohmann::json::parse(line);
      for (const char* key : {"index", "pred", "input", "outputs", "others", "truncation", "length"})
        EXPECT_TRUE(row.contains(key)) << key;
      EXPECT_LE(row["length"].get<int>(), 1024);
    }
    EXPECT_EQ(lines, 2);
  }
  // Killed after one prediction, then restarted: same files as the uninterrupted run.
  auto part = tiny_ruler(assets_, dir / "b");
  part.max_samples = 1;
  const auto s2 = eval::run_ruler_eval(*model_, *tokenizer_, part, log);
  EXPECT_TRUE(s2.stopped_early);
  EXPECT_EQ(s2.predicted, 1);
  part.max_samples = -1;
  const auto s3 = eval::run_ruler_eval(*model_, *tokenizer_, part, log);
  EXPECT_EQ(s3.predicted, 3);
  for (const char* run : {"full", "snapkv_L64"}) {
    EXPECT_EQ(pred_file(dir / "a" / run, "niah_single_1"), pred_file(dir / "b" / run, "niah_single_1")) << run;
    EXPECT_EQ(slurp(dir / "a" / run / "summary.csv"), slurp(dir / "b" / run / "summary.csv"));
  }
  // A third run has nothing left to do.
  EXPECT_EQ(eval::run_ruler_eval(*model_, *tokenizer_, part, log).predicted, 0);
  // Shards: 1/2 takes the odd index only, in its own folder.
  auto shard = tiny_ruler(assets_, dir / "c");
  shard.shard = eval::ShardSpec::parse("1/2");
  shard.settings = eval::expand_press_settings({PressConfig::parse("snapkv")}, {64});
  const auto s4 = eval::run_ruler_eval(*model_, *tokenizer_, shard, log);
  EXPECT_EQ(s4.predicted, 1);
  EXPECT_TRUE(fs::exists(dir / "c/snapkv_L64_shard1of2/summary.csv"));
}

TEST_F(EvalRunnerStories, RulerExistingFileAndKvpressProtocol) {
  const fs::path dir = test::temp_dir();
  // A tiny RULER-format file (old style: answer prefix inside input).
  {
    std::ofstream f(dir / "mini_niah.jsonl");
    f << R"({"index": 0, "input": "Once upon a time there was a cat.\nOne of the special magic numbers for cat is: 1234567.\nWhat is the special magic number for cat? The special magic number for cat is", "outputs": ["1234567"], "length": 200})" "\n";
    f << R"({"index": 1, "input": "Lily liked the park.\nWhat did Lily like? Lily liked", "outputs": ["park"], "length": 150})" "\n";
  }
  eval::RulerEvalConfig c;
  c.data_files = {dir / "mini_niah.jsonl"};
  c.settings = eval::expand_press_settings({PressConfig::parse("snapkv")}, {16});
  c.protocol = eval::Protocol::kvpress;
  c.output_dir = dir / "out";
  std::ostringstream log;
  const auto s = eval::run_ruler_eval(*model_, *tokenizer_, c, log);
  EXPECT_EQ(s.predicted, 2);
  EXPECT_TRUE(fs::exists(dir / "out/snapkv_L16/pred/mini_niah.jsonl"));
  EXPECT_NE(slurp(dir / "out/snapkv_L16/run.json").find("kvpress"), std::string::npos);
  // A malformed row is named by file and line.
  {
    std::ofstream f(dir / "bad.jsonl");
    f << R"({"index": 0, "input": "x", "outputs": ["a"]})" "\n" << R"({"index": 1, "outputs": ["a"]})" "\n";
  }
  c.data_files = {dir / "bad.jsonl"};
  try {
    eval::run_ruler_eval(*model_, *tokenizer_, c, log);
    FAIL() << "expected an error";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
}

// Hand-made LongBench rows and config files.
void write_longbench_fixture(const fs::path& dir) {
  fs::create_directories(dir / "data");
  std::ofstream(dir / "dataset2prompt.json")
      << R"({"hotpotqa": "Answer the question based on the given passages.\n\n{context}\n\nQuestion: {input}\nAnswer:",
             "samsum": "Summarize the dialogue.\n\n{context}\n\nSummary: {input}",
             "trec": "Classify the question.\n\n{context}\n{input}"})";
  std::ofstream(dir / "dataset2maxlen.json") << R"({"hotpotqa": 8, "samsum": 12, "trec": 6})";
  std::ofstream h(dir / "data/hotpotqa.jsonl");
  for (int i = 0; i < 3; ++i)
    h << nlohmann::json{{"input", "Who had a red ball?"},
                        {"context", "Once upon a time, Tom had a red ball. He played with it every day in the park. "
                                    "His friend Sue liked the ball too."},
                        {"answers", {"Tom"}}, {"length", 30}, {"dataset", "hotpotqa"}, {"language", "en"},
                        {"all_classes", nullptr}, {"_id", "h" + std::to_string(i)}}
             .dump()
      << "\n";
  std::ofstream s(dir / "data/samsum.jsonl");
  s << nlohmann::json{{"input", ""}, {"context", "Tom: hi\nSue: hello, want to play?\nTom: yes"},
                      {"answers", {"Tom and Sue will play."}}, {"length", 10}, {"all_classes", nullptr}, {"_id", "s0"}}
           .dump()
    << "\n";
  std::ofstream t(dir / "data/trec.jsonl");
  t << nlohmann::json{{"input", "What is a cat?"}, {"context", "Question: Who is he?\nType: Human\n"},
                      {"answers", {"Definition"}}, {"length", 10}, {"all_classes", {"Human", "Definition"}}, {"_id", "t0"}}
           .dump()
    << "\n";
}

eval::LongBenchEvalConfig tiny_longbench(const fs::path& dir, const fs::path& out) {
  eval::LongBenchEvalConfig c;
  c.data = dir / "data";
  c.dataset2prompt = dir / "dataset2prompt.json";
  c.dataset2maxlen = dir / "dataset2maxlen.json";
  c.max_length = 40;  // forces middle truncation of the hotpotqa prompt
  c.settings = eval::expand_press_settings({PressConfig::parse("snapkv")}, {16});
  c.output_dir = out;
  c.model_name = "stories260K";
  return c;
}

TEST_F(EvalRunnerStories, LongBenchRunLayoutAndResume) {
  const fs::path dir = test::temp_dir();
  write_longbench_fixture(dir);
  std::ostringstream log;
  const auto a = eval::run_longbench_eval(*model_, *tokenizer_, tiny_longbench(dir, dir / "a"), log);
  EXPECT_EQ(a.predicted, 5);
  const fs::path run = dir / "a/snapkv_L16/pred/stories260K";
  for (const char* d : {"hotpotqa", "samsum", "trec"}) EXPECT_TRUE(fs::exists(run / (std::string(d) + ".jsonl"))) << d;
  const auto result = nlohmann::json::parse(slurp(run / "result.json"));
  EXPECT_EQ(result.size(), 3u);
  EXPECT_TRUE(result.contains("hotpotqa"));
  EXPECT_TRUE(fs::exists(run / "run.json"));
  const auto row = nlohmann::json::parse(slurp(run / "samsum.jsonl"));
  for (const char* key : {"pred", "answers", "all_classes", "length"}) EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_EQ(row["pred"].get<std::string>().find('\n'), std::string::npos);  // samsum stops at a newline

  auto b = tiny_longbench(dir, dir / "b");
  b.max_samples = 2;
  EXPECT_TRUE(eval::run_longbench_eval(*model_, *tokenizer_, b, log).stopped_early);
  b.max_samples = -1;
  EXPECT_EQ(eval::run_longbench_eval(*model_, *tokenizer_, b, log).predicted, 3);
  for (const char* d : {"hotpotqa.jsonl", "samsum.jsonl", "trec.jsonl", "result.json"})
    EXPECT_EQ(slurp(run / d), slurp(dir / "b/snapkv_L16/pred/stories260K" / d)) << d;
}

TEST_F(EvalRunnerStories, LongBenchErrors) {
  const fs::path dir = test::temp_dir();
  write_longbench_fixture(dir);
  std::ostringstream log;
  std::ofstream(dir / "data/hotpotqa.jsonl", std::ios::app) << R"({"input": "q", "answers": ["a"]})" "\n";
  auto c = tiny_longbench(dir, dir / "out");
  try {
    eval::run_longbench_eval(*model_, *tokenizer_, c, log);
    FAIL();
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("hotpotqa.jsonl:4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("context"), std::string::npos) << e.what();
  }
  write_longbench_fixture(dir);
  c.datasets = {"dureader"};
  std::ofstream(dir / "data/dureader.jsonl") << R"({"input": "q", "context": "c", "answers": ["a"]})" "\n";
  EXPECT_THROW(eval::run_longbench_eval(*model_, *tokenizer_, c, log), MkvError);  // no template / Chinese
  c.datasets = {"nosuch"};
  EXPECT_THROW(eval::run_longbench_eval(*model_, *tokenizer_, c, log), MkvError);
  eval::LongBenchRow row;
  row.input = "I";
  row.context = "C";
  EXPECT_EQ(eval::format_longbench_prompt("{{x}} {context}|{input}", row, "d"), "{x} C|I");
  EXPECT_THROW(eval::format_longbench_prompt("{other}", {}, "d"), MkvError);
}

}  // namespace
}  // namespace mkv
