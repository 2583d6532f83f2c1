// tools/bench_ab.sh, the A/B speed comparison of two momentkv builds: rounds alternate A B, B A,
// the summary counts every round, a revision resolves through its build in the cache (here one
// placed there by the test, so nothing is compiled), and bad arguments are one-line errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "support/test_support.h"

namespace mkv {
namespace {

namespace fs = std::filesystem;

const std::string kScript = std::string(MOMENTKV_SOURCE_DIR) + "/tools/bench_ab.sh";

// A tiny random model, written once per test binary run.
const std::string& tiny_model() {
  static const std::string path = [] {
    const auto p = (fs::temp_directory_path() / ("bench_ab_tiny_" + std::to_string(::getpid()) + ".gguf")).string();
    const test::ShellRun r = test::run_momentkv("make-model --shape tiny-llama --type Q8_0 -o " + p);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return path;
}

// bench_ab.sh with `env` set, as typed in a shell, in the repository (so revisions resolve there).
test::ShellRun bench_ab(const std::string& env, const std::string& args) {
  return test::run_shell("cd '" + std::string(MOMENTKV_SOURCE_DIR) + "' && env " + env + " bash " + kScript + " " + args);
}

std::vector<std::string> round_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, std::regex("[AB] round [0-9]+: [0-9.]+ t/s"))) lines.push_back(line.substr(0, line.find(':')));
  return lines;
}

TEST(BenchAbScript, AlternatesTheOrderAndSummarisesEveryRound) {
  const std::string bin = MOMENTKV_BIN;
  const test::ShellRun r = bench_ab("TEST=tg4 REPS=1", bin + " " + bin + " " + tiny_model() + " 3 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> expected = {"A round 1", "B round 1", "B round 2", "A round 2", "A round 3", "B round 3"};
  EXPECT_EQ(round_lines(r.out), expected) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nmedian: A [0-9.]+, B [0-9.]+ t/s; B / A = [0-9.]+x\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nrounds: B / A median [0-9.]+x \\(range [0-9.]+-[0-9.]+\\)\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nB ahead: [0-3] of 3 rounds\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("# A: .* \\(commit [^)]+\\): kernels [a-z0-9_-]+\n"))) << r.out;
}

TEST(BenchAbScript, ARevisionRunsItsCachedBuild) {
  // The cache entry of HEAD's commit holds this build's binary: the script must find it there
  // (by the full commit id) instead of building.
  const test::ShellRun head = test::run_shell("git -C '" + std::string(MOMENTKV_SOURCE_DIR) + "' rev-parse HEAD");
  if (head.exit_code != 0) GTEST_SKIP() << "the source folder is not a git checkout: " << head.err;
  const std::string commit = head.out.substr(0, head.out.find('\n'));
  const fs::path cache = test::temp_dir();
  fs::create_directories(cache / commit / "build");
  fs::copy_file(MOMENTKV_BIN, cache / commit / "build" / "momentkv");
  const test::ShellRun r =
      bench_ab("TEST=tg4 REPS=1 AB_CACHE='" + cache.string() + "'", "HEAD " + std::string(MOMENTKV_BIN) + " " + tiny_model() + " 1 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("building"), std::string::npos) << r.err;
  EXPECT_EQ(round_lines(r.out), (std::vector<std::string>{"A round 1", "B round 1"})) << r.out;
  EXPECT_NE(r.out.find("# A: HEAD (commit "), std::string::npos) << r.out;
}

TEST(BenchAbScript, BadArgumentsAreOneLineErrors) {
  const std::string bin = MOMENTKV_BIN, model = tiny_model();
  test::expect_one_line_error(bench_ab("", bin), "usage: bench_ab.sh A B MODEL.gguf");
  test::expect_one_line_error(bench_ab("", "no-such-build-or-rev " + bin + " " + model),
                              "'no-such-build-or-rev' is neither an executable file nor a revision");
  test::expect_one_line_error(bench_ab("", bin + " " + bin + " /nonexistent.gguf"), "no model file '/nonexistent.gguf'");
  test::expect_one_line_error(bench_ab("", bin + " " + bin + " " + model + " 0"), "ROUNDS must be a positive integer, got '0'");
  test::expect_one_line_error(bench_ab("", bin + " " + bin + " " + model + " 1 x"), "THREADS must be a positive integer, got 'x'");
  test::expect_one_line_error(bench_ab("REPS=-1", bin + " " + bin + " " + model), "REPS must be a positive integer, got '-1'");
  test::expect_one_line_error(bench_ab("TEST=tg", bin + " " + bin + " " + model), "TEST must be ppN, tgN, ppN@dD or tgN@dD, got 'tg'");
  test::expect_one_line_error(bench_ab("TEST=tg4 REPS=1", bin + " " + bin + " " + model + " 1 1 -- --press bogus"),
                              "bench failed: unknown press 'bogus'");
}

}  // namespace
}  // namespace mkv
