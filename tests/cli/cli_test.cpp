// The momentkv binary end to end: outputs, exit codes and one-line error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>
#include <sys/wait.h>

#include "cli/cli_runner.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using test::expect_one_line_error;

test::CliResult run_cli(const std::string& args) { return test::run_momentkv(args); }

std::string stories_model() {
  auto assets = test::shared_assets();
  if (!assets || !std::filesystem::exists(*assets / "stories260K.gguf")) return "";
  return (*assets / "stories260K.gguf").string();
}

TEST(Cli, UnknownSubcommandAndFlagsAreOneLineErrors) {
  expect_one_line_error(run_cli("frobnicate"), "frobnicate");
  expect_one_line_error(run_cli("generate --no-such-flag"), "--no-such-flag");
  expect_one_line_error(run_cli("generate -n abc"), "abc");
}

TEST(Cli, MissingModelFileIsNamed) {
  expect_one_line_error(run_cli("generate -m /nonexistent/model.gguf -p hi"), "/nonexistent/model.gguf");
}

TEST(Cli, NotAGgufFileIsRejected) {
  const auto path = test::temp_dir() / "bad.gguf";
  std::ofstream(path) << "this is not a gguf file at all";
  expect_one_line_error(run_cli("generate -m " + path.string() + " -p hi"), "bad.gguf");
}

TEST(Cli, BadValuesAreRejected) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "shared asset 'stories260K.gguf' not found";
  expect_one_line_error(run_cli("generate -m " + model + " -p hi -ub 0"), "-ub");
  expect_one_line_error(run_cli("generate -m " + model + " -p hi -ctk q9"), "q9");
  expect_one_line_error(run_cli("generate -m " + model + " -p hi --top-p 1.5"), "top");
  expect_one_line_error(run_cli("generate -m " + model + " -f /nonexistent/prompt.txt"), "/nonexistent/prompt.txt");
  expect_one_line_error(run_cli("logits -m " + model + " --tokens 1,x,3 -o /dev/null"), "'x'");
  expect_one_line_error(run_cli("logits -m " + model + " --tokens 1,99999 -o /dev/null"), "99999");
}

// llama.cpp users give -ctk and -ctv together; momentkv has one type for both.
TEST(Cli, CacheTypeFlagsMayBothBeGivenWhenTheyAgree) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "shared asset 'stories260K.gguf' not found";
  const std::string gen = "generate -m " + model + " -p 'Once upon a time' -n 8 --temp 0";
  const test::CliResult f16 = run_cli(gen + " -ctk f16");
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  const test::CliResult both = run_cli(gen + " -ctk f16 -ctv f16");
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(both.out, f16.out);
  expect_one_line_error(run_cli(gen + " -ctk f16 -ctv f32"), "share one cache type");
  expect_one_line_error(run_cli("bench -m " + model + " -p 0 -n 2 -r 1 --no-probe -ctk f16 -ctv f32"),
                        "share one cache type");
}

TEST(Cli, FastPrecisionFlagSwitchesDecodeProductsToIntegerKernels) {
  // A tiny Q8_0 model; two tokens are a decode-sized batch, so --fast takes the integer path.
  const auto dir = test::temp_dir();  // (each call empties the directory)
  const auto model = (dir / "cli_fast_q8.gguf").string();
  const test::CliResult made = run_cli("make-model --shape tiny-llama --type Q8_0 -o " + model);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto logits = [&](const std::string& flags) {
    const auto path = dir / "cli_fast_logits.f32";
    const test::CliResult r = run_cli("logits -m " + model + " --tokens 1,2 -o " + path.string() + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    std::vector<float> values(static_cast<std::size_t>(in.tellg()) / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
    return values;
  };
  const std::vector<float> exact = logits(""), named = logits(" --precision exact"), fast = logits(" --fast");
  ASSERT_FALSE(exact.empty());
  EXPECT_EQ(named, exact);
  ASSERT_EQ(fast.size(), exact.size());
  EXPECT_NE(fast, exact);  // 8-bit (or fp16) activations round differently...
  float scale = 0.0f, diff = 0.0f;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    scale = std::max(scale, std::abs(exact[i]));
    diff = std::max(diff, std::abs(fast[i] - exact[i]));
  }
  EXPECT_LT(diff, 0.05f * scale) << "...but stay close";
  expect_one_line_error(run_cli("logits -m " + model + " --tokens 1,2 -o /dev/null --precision half"), "half");
}

TEST(Cli, GreedyGenerationOfStories260K) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "shared asset 'stories260K.gguf' not found";
  const test::CliResult r = run_cli("generate -m " + model + " -p 'Once upon a time' -n 24 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The float64 reference's greedy continuation of this prompt starts like this.
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;
}

TEST(Cli, NoMmapReadsTheSameModel) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "shared asset 'stories260K.gguf' not found";
  const std::string args = "generate -m " + model + " -p 'Once upon a time' -n 24 --temp 0";
  const test::CliResult mapped = run_cli(args), read = run_cli(args + " --no-mmap");
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, mapped.out);
  expect_one_line_error(run_cli("generate -m /nonexistent/model.gguf -p hi --no-mmap"), "/nonexistent/model.gguf");
}

TEST(Cli, LogitsFileHasOneRowPerToken) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "shared asset 'stories260K.gguf' not found";
  const auto out = test::temp_dir() / "logits.f32";
  const test::CliResult r = run_cli("logits -m " + model + " --tokens 1,403,407,261 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::filesystem::file_size(out), 4u * 512u * sizeof(float));
  // Row 0 is the prediction after BOS; the reference's top-1 there is token 403 with logit 17.02352.
  std::ifstream in(out, std::ios::binary);
  std::vector<float> row(512);
  in.read(reinterpret_cast<char*>(row.data()), 512 * sizeof(float));
  EXPECT_NEAR(row[403], 17.02352, 1e-3);
}

}  // namespace
}  // namespace mkv
