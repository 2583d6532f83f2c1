// --press / --kv-budget / --compression-ratio: one PressConfig per command, validated where the
// flags are parsed; the canonical spec printed by generate round-trips through --press.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_runner.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using test::expect_one_line_error;
using test::run_momentkv;

class CliPressFlags : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    model_ = (dir_ / "tiny.gguf").string();
    const test::CliResult made = run_momentkv("make-model --shape tiny-llama -o " + model_);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  std::string generate(const std::string& flags) const {
    return "generate -m " + model_ + " -p 'hello world' -n 4 --temp 0 " + flags;
  }
  std::filesystem::path dir_;
  std::string model_;
};

TEST_F(CliPressFlags, APressNeedsExactlyOneBudget) {
  expect_one_line_error(run_momentkv(generate("--press snapkv")), "press 'snapkv' needs a budget");
  expect_one_line_error(run_momentkv(generate("--kv-budget 8")), "need a --press");
  expect_one_line_error(run_momentkv(generate("--press full --kv-budget 8")), "press 'full' keeps every token");
  expect_one_line_error(run_momentkv(generate("--press snapkv:budget=8 --kv-budget 16")), "given twice");
  expect_one_line_error(run_momentkv(generate("--press snapkv --kv-budget 8 --compression-ratio 0.5")), "not both");
  expect_one_line_error(run_momentkv(generate("--press snapkv --kv-budget 0")), "--kv-budget must be in [1");
  expect_one_line_error(run_momentkv(generate("--press snapkv --kv-budget 99999999999")), "--kv-budget must be in [1");
  expect_one_line_error(run_momentkv(generate("--press snapkv --compression-ratio 1")), "--compression-ratio must be in [0, 1)");
  expect_one_line_error(run_momentkv(generate("--press snapkv --press h2o --kv-budget 8")), "give one --press");
  expect_one_line_error(run_momentkv(generate("--press snapkv:kernel=4 --kv-budget 8")), "kernel=4 must be odd");
}

TEST_F(CliPressFlags, CanonicalSpecRoundTripsThroughPress) {
  const test::CliResult first = run_momentkv(generate("--press momentkv:rounds=2 --kv-budget 8"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::size_t at = first.err.find("press: ");
  ASSERT_NE(at, std::string::npos) << first.err;
  const std::string canonical = first.err.substr(at + 7, first.err.find('\n', at) - at - 7);
  EXPECT_NE(canonical.find("budget=8"), std::string::npos) << canonical;  // the flag's budget is in the spec
  const test::CliResult again = run_momentkv(generate("--press " + canonical));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_NE(again.err.find("press: " + canonical + "\n"), std::string::npos) << again.err;
}

TEST_F(CliPressFlags, BudgetListsComeFromBudgetsOnly) {
  const auto text = dir_ / "text.txt";
  expect_one_line_error(run_momentkv("kl -m " + model_ + " --press snapkv:budget=8 --budgets 8"),
                        "give budgets with --budgets");
  expect_one_line_error(run_momentkv("fidelity -m " + model_ + " --press snapkv:ratio=0.5 -o " + (dir_ / "f").string()),
                        "give budgets with --budgets");
  expect_one_line_error(run_momentkv("eval ruler -m " + model_ + " --press h2o:budget=8 -o " + (dir_ / "e").string()),
                        "give budgets with --budgets");
  expect_one_line_error(run_momentkv("bench -m " + model_ + " --kv-budget 8 -p 0 -n 2 -r 1 --no-probe"), "need a --press");
  expect_one_line_error(run_momentkv("bench -m " + model_ + " --press snapkv -p 0 -n 2 -d 8 -r 1 --no-probe"),
                        "press 'snapkv' needs a budget");
  expect_one_line_error(run_momentkv("kl -m " + model_ + " --press adakv:scorer=momentkv --budgets 8"),
                        "momentkv:alloc=adaptive");
}

// serve validates its flags before it binds a port (it would otherwise run until stopped).
TEST_F(CliPressFlags, ServeRejectsBadFlagsBeforeListening) {
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --press snapkv"), "press 'snapkv' needs a budget");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --kv-budget 8"), "need a --press");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --port 70000"), "--port must be in [0, 65535]");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " -np 0"), "-np must be in [1, 32]");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " -np 33"), "-np must be in [1, 32]");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " -np 8 -ub 4"), "-np 8 is above the batch size -ub 4");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --kv-memory -1"), "--kv-memory must be in [0,");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --kv-memory nan"), "--kv-memory");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --queue 0"), "--queue must be in [1, 24]");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --timeout 0"), "--timeout must be positive");
  expect_one_line_error(run_momentkv("serve -m " + model_ + " --header-timeout -3"), "--header-timeout must be positive");
}

// kl's held-out protocol: seeded dev/test windows, intervals, and the provenance line.
TEST_F(CliPressFlags, KlHeldOutSplitsWithIntervalsAndProvenance) {
  const auto text = dir_ / "story.txt";
  std::string story;
  for (int i = 0; i < 120; ++i) story += "Tom had a red ball. He liked to play with it in the park every day. ";
  std::ofstream(text) << story;
  const std::string kl = "kl -m " + model_ + " -f " + text.string() +
                         " --press snapkv --budgets 8 --nc off --prompt-tokens 24 --continuation-tokens 8";
  const test::CliResult r = run_momentkv(kl + " --windows 3 --split test --seed 5 -o " + (dir_ / "kl.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("<!-- command: momentkv kl "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" · commit "), std::string::npos);
  EXPECT_NE(r.out.find(" · CPU "), std::string::npos);
  EXPECT_NE(r.out.find("split test: 3 windows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ["), std::string::npos) << "a bootstrap interval: " << r.out;
  const std::string json = test::read_file(dir_ / "kl.json");
  EXPECT_NE(json.find("\"kl_ci95\""), std::string::npos);
  EXPECT_NE(json.find("\"split\": \"test\""), std::string::npos);
  const test::CliResult dev = run_momentkv(kl + " --windows 3 --split dev --seed 5");
  ASSERT_EQ(dev.exit_code, 0) << dev.err;
  EXPECT_NE(dev.out.substr(dev.out.find("| snapkv")), r.out.substr(r.out.find("| snapkv")));  // other windows
  expect_one_line_error(run_momentkv(kl + " --windows 3 --split train"), "--split must be dev, test or first");
  expect_one_line_error(run_momentkv(kl + " --split test --windows 500"), "in the test split");
}

// bench checks each test against the model's context before allocating anything (the tiny model
// has 4096 positions), and prefills the depth again per repetition when they would not all fit.
TEST_F(CliPressFlags, BenchTestsMustFitTheContext) {
  expect_one_line_error(run_momentkv("bench -m " + model_ + " -p 100000000 -n 0 -r 1 --no-probe"),
                        "bench pp100000000: needs 100000001 positions");
  expect_one_line_error(run_momentkv("bench -m " + model_ + " -p 0 -n 4 -d 99999999 -r 1 --no-probe"),
                        "more than the model's context of 4096");
  const test::CliResult fits = run_momentkv("bench -m " + model_ + " -p 3000 -n 0 -r 2 --no-probe -o json");
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(fits.out.find("\"test\": \"pp3000\""), std::string::npos) << fits.out;
}

}  // namespace
}  // namespace mkv
