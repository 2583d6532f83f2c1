// momentkv fidelity / eval ruler / eval longbench / report end to end: files and one-line errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_runner.h"
#include "support/test_support.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;

using EvalRun = test::CliResult;

EvalRun momentkv(const std::string& args) { return test::run_momentkv(args); }

void expect_error(const EvalRun& r, const std::string& fragment) { test::expect_one_line_error(r, fragment); }

std::string model_flag() {
  auto assets = test::shared_assets();
  if (!assets || !fs::exists(*assets / "stories260K.gguf")) return "";
  return "-m " + (*assets / "stories260K.gguf").string();
}

TEST(CliEval, FidelityWritesReportJsonAndPlots) {
  const std::string m = model_flag();
  if (m.empty()) GTEST_SKIP() << "stories260K.gguf not found";
  const auto dir = test::temp_dir() / "fid";
  const auto r = momentkv("fidelity " + m + " --press snapkv --press momentkv --budgets 16,64 --windows 1 "
                          "--prompt-tokens 192 --continuation-tokens 16 -o " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"fidelity.md", "fidelity.json", "error_vs_budget.svg", "cosine_per_layer.svg",
                        "cosine_vs_budget.svg", "kl_vs_budget.svg"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_NE(r.out.find("| snapkv | 16 |"), std::string::npos) << r.out;
}

TEST(CliEval, BadFlagsAreOneLineErrors) {
  const std::string m = model_flag();
  if (m.empty()) GTEST_SKIP() << "stories260K.gguf not found";
  const auto dir = test::temp_dir();
  expect_error(momentkv("fidelity " + m + " --budgets 16,x -o " + dir.string()), "'x'");
  expect_error(momentkv("fidelity " + m + " --press nosuchpress --budgets 16 -o " + dir.string()), "nosuchpress");
  expect_error(momentkv("eval ruler " + m + " --protocol fast -o " + dir.string()), "--protocol");
  expect_error(momentkv("eval ruler " + m + " --shard 2/2 -o " + dir.string()), "2/2");
  expect_error(momentkv("eval ruler " + m + " --data /nonexistent.jsonl -o " + dir.string()), "/nonexistent.jsonl");
  expect_error(momentkv("eval ruler " + m + " --tasks nosuchtask -o " + dir.string()), "nosuchtask");
  expect_error(momentkv("eval longbench " + m + " --data /nonexistent --dataset2prompt a --dataset2maxlen b -o " +
                        dir.string()),
               "/nonexistent");
  expect_error(momentkv("report /nonexistent/folder"), "/nonexistent/folder");
  expect_error(momentkv("eval"), "");
}

TEST(CliEval, RulerFileRunThenReport) {
  const std::string m = model_flag();
  if (m.empty()) GTEST_SKIP() << "stories260K.gguf not found";
  const auto dir = test::temp_dir();
  {
    std::ofstream f(dir / "mini.jsonl");
    f << R"({"index": 0, "input": "Tom had a red ball.\nWhat did Tom have? Tom had a", "outputs": ["ball"], "length": 100})"
      << "\n";
  }
  const auto out = dir / "ruler";
  auto r = momentkv("eval ruler " + m + " --data " + (dir / "mini.jsonl").string() +
                    " --press full --press snapkv --budgets 16,32 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* run : {"full", "snapkv_L16", "snapkv_L32"}) {
    EXPECT_TRUE(fs::exists(out / run / "summary.csv")) << run;
    EXPECT_TRUE(fs::exists(out / run / "pred/mini.jsonl")) << run;
  }
  const auto rep = dir / "report";
  r = momentkv("report " + out.string() + " -o " + rep.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("snapkv"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(rep / "report.md"));
  EXPECT_TRUE(fs::exists(rep / "stories260K_mean.svg"));
}

}  // namespace
}  // namespace mkv
