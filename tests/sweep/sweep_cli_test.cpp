// momentkv sweep run --local / status / submit --dry-run and report on a sweep, through the binary.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "sweep/sweep_test_support.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A failing command prints exactly one "error: " line containing `fragment`.
void expect_one_line_error(const test::ShellRun& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(contains(r.err, fragment)) << "expected '" << fragment << "' in: " << r.err;
}

// 2 presses × 1 budget × 2 shards on 4 needle samples: 4 tasks of 2 samples each.
fs::path tiny_sweep(const fs::path& dir) {
  const fs::path data = test::needle_samples(dir / "samples.jsonl", 4);
  test::write_text(dir / "sweep.json", test::needle_sweep(data, dir / "out", {64}, 2).dump(1));
  return dir / "sweep.json";
}

json status_of(const fs::path& file) {
  const test::ShellRun r = test::run_momentkv("sweep status --json " + file.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(SweepCli, LocalRunThenStatusThenReport) {
  const fs::path dir = test::temp_dir();
  const fs::path file = tiny_sweep(dir);
  test::ShellRun r = test::run_momentkv("sweep run " + file.string() + " --local 2");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "sweep needle: 4 task(s) run: 4 done, 0 failed")) << r.out;

  const json status = status_of(file);
  EXPECT_EQ(status["counts"]["done"], 4) << status.dump(1);
  for (const json& t : status["tasks"]) EXPECT_EQ(t["state"], "done") << t.dump();

  // Every sample of every configuration once, across the two shards.
  const test::Predictions p = test::read_predictions(dir / "out");
  EXPECT_EQ(p.duplicates, 0);
  ASSERT_EQ(p.by_key.size(), 2u * 4);
  for (const char* label : {"snapkv_kernel_15_L64", "streaming_llm_L64"})
    for (int i = 0; i < 4; ++i)
      EXPECT_TRUE(p.by_key.count(fmt::format("stories-needle-2k/{}/samples#{}", label, i))) << label << " " << i;

  // Again: nothing left to do, nothing rewritten.
  r = test::run_momentkv("sweep run " + file.string() + " --local 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "0 task(s) run: 0 done, 0 failed; 4 already done")) << r.out;

  const test::ShellRun report = test::run_momentkv("report " + (dir / "out").string());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(report.out, "| stories-needle-2k | snapkv:kernel=15 | 64 |")) << report.out;
  EXPECT_TRUE(contains(report.out, "| stories-needle-2k | streaming_llm | 64 |")) << report.out;
  EXPECT_FALSE(contains(report.err, "warning")) << report.err;
  // The root given twice, or with a folder inside it, merges each shard once: the same table.
  const std::string shard_folder = (dir / "out" / "stories-needle-2k").string();
  EXPECT_EQ(test::run_momentkv("report " + (dir / "out").string() + " " + (dir / "out").string()).out, report.out);
  EXPECT_EQ(test::run_momentkv("report " + (dir / "out").string() + " " + shard_folder).out, report.out);
}

TEST(SweepCli, AFailedTaskIsReportedAndResumedByRunningAgain) {
  const fs::path dir = test::temp_dir();
  const fs::path file = tiny_sweep(dir);
  // Task 1's run folder is blocked by a file: eval cannot create it.
  const fs::path blocked = dir / "out/stories-needle-2k/snapkv_kernel_15_L64/shard1of2/snapkv_kernel_15_L64_shard1of2";
  test::write_text(blocked, "in the way\n");
  test::ShellRun r = test::run_momentkv("sweep run " + file.string() + " --local 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.out, "3 done, 1 failed")) << r.out;
  EXPECT_TRUE(contains(r.err, "task 1 FAILED (exit 1)")) << r.err;
  EXPECT_TRUE(contains(r.err, "error: sweep needle: task(s) 1 failed")) << r.err;
  json status = status_of(file);
  EXPECT_EQ(status["tasks"][1]["state"], "failed");
  EXPECT_TRUE(contains(status["tasks"][1]["detail"].get<std::string>(), "eval exited with 1"));
  EXPECT_TRUE(contains(test::read_file(status["tasks"][1]["log"].get<std::string>()), "error: "));

  // A report of the partial sweep says which shard is missing.
  const test::ShellRun partial = test::run_momentkv("report " + (dir / "out").string());
  EXPECT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_TRUE(contains(partial.err, "only shard(s) 0/2 of 2")) << partial.err;

  fs::remove(blocked);
  r = test::run_momentkv("sweep run " + file.string() + " --local 2 --only failed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "1 task(s) run: 1 done")) << r.out;
  status = status_of(file);
  EXPECT_EQ(status["counts"]["done"], 4) << status.dump(1);
}

TEST(SweepCli, LongBenchSweepRunsLocallyAndReports) {
  const fs::path dir = test::temp_dir();
  test::write_text(dir / "dataset2prompt.json",
                   R"({"hotpotqa": "Answer the question based on the given passages.\n\n{context}\n\nQuestion: {input}\nAnswer:"})");
  test::write_text(dir / "dataset2maxlen.json", R"({"hotpotqa": 8})");
  std::string rows;
  for (int i = 0; i < 4; ++i)
    rows += json{{"input", "Who had a red ball?"},
                 {"context", "Once upon a time, Tom had a red ball. He played with it every day in the park."},
                 {"answers", {"Tom"}}, {"length", 30}, {"dataset", "hotpotqa"}, {"language", "en"},
                 {"all_classes", nullptr}, {"_id", "h" + std::to_string(i)}}
                .dump() + "\n";
  test::write_text(dir / "data" / "hotpotqa.jsonl", rows);
  const json sweep = {{"models", {test::needle_model().string()}},
                      {"benchmark", {{"name", "longbench"}, {"data", "data"}, {"dataset2prompt", "dataset2prompt.json"},
                                     {"dataset2maxlen", "dataset2maxlen.json"}}},
                      {"presses", {"full", "snapkv"}},
                      {"budgets", {16}},
                      {"shards", 2},
                      {"output", "out"}};
  test::write_text(dir / "lb.json", sweep.dump());
  const test::ShellRun r = test::run_momentkv("sweep run " + (dir / "lb.json").string() + " --local 2");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json status = status_of(dir / "lb.json");
  EXPECT_EQ(status["counts"]["done"], 4) << status.dump(1);
  EXPECT_TRUE(fs::exists(dir / "out/stories-needle-2k/snapkv_L16/shard1of2/snapkv_L16_shard1of2/pred/stories-needle-2k/result.json"));
  const test::ShellRun report = test::run_momentkv("report " + (dir / "out").string());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(report.out, "| stories-needle-2k | full | full |")) << report.out;
  EXPECT_TRUE(contains(report.out, "| stories-needle-2k | snapkv | 16 |")) << report.out;
  EXPECT_EQ(report.err, "");
}

TEST(SweepCli, DryRunPrintsTheScriptAndWritesNothing) {
  const fs::path dir = test::temp_dir();
  const fs::path file = tiny_sweep(dir);
  const test::ShellRun r = test::run_momentkv("sweep submit " + file.string() + " --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_TRUE(contains(r.out, "#SBATCH --array=0-3\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "#SBATCH --time=00:10:00\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "momentkv=" + fs::canonical(MOMENTKV_BIN).string())) << r.out;
  EXPECT_TRUE(contains(r.err, "sbatch --parsable --array=0-3 " + (dir / "out/slurm/needle.sbatch").string())) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
  const test::ShellRun subset = test::run_momentkv("sweep submit " + file.string() + " --dry-run --array 1,3");
  EXPECT_TRUE(contains(subset.err, "--array=1,3 ")) << subset.err;
}

TEST(SweepCli, BadSweepsAreOneLineErrorsAndNothingIsWritten) {
  const fs::path dir = test::temp_dir();
  const fs::path file = tiny_sweep(dir);
  const json good = json::parse(test::read_file(file));
  const auto with = [&](const std::function<void(json&)>& change) {
    json j = good;
    change(j);
    test::write_text(file, j.dump());
    return file.string();
  };
  const std::string f = file.string();
  expect_one_line_error(test::run_momentkv("sweep submit " + with([](json& j) { j["shards"] = 0; })),
                        f + ": shards: must be between 1 and");
  expect_one_line_error(test::run_momentkv("sweep run --local 1 " + with([](json& j) { j["presses"] = {"snapkv", "bogus"}; })),
                        f + ": presses[1]: ");
  expect_one_line_error(test::run_momentkv("sweep status " + with([](json& j) { j["models"] = {"gone.gguf"}; })),
                        f + ": models[0]: '" + (dir / "gone.gguf").string() + "' does not exist");
  expect_one_line_error(test::run_momentkv("sweep submit --dry-run " + with([](json& j) { j["slurm"]["memory"] = "4G"; })),
                        f + ": slurm.memory: unknown field");
  test::write_text(file, "{\"name\": \"needle\",");
  expect_one_line_error(test::run_momentkv("sweep submit " + f), f + ": not valid JSON");
  expect_one_line_error(test::run_momentkv("sweep submit " + (dir / "none.json").string()), (dir / "none.json").string());
  EXPECT_FALSE(fs::exists(dir / "out"));
  test::write_text(file, good.dump());
  expect_one_line_error(test::run_momentkv("sweep run " + f + " --local 0"), "--local must be at least 1");
  expect_one_line_error(test::run_momentkv("sweep submit " + f + " --array 7"), "--array: task 7 does not exist");
  EXPECT_NE(test::run_momentkv("sweep submit " + f + " --only done").exit_code, 0);
}

TEST(SweepCli, SubmitWithoutSlurmSaysHowToRunInstead) {
  const fs::path dir = test::temp_dir();
  const fs::path file = tiny_sweep(dir);
  const test::ShellRun r = test::run_shell("PATH=/nonexistent " + std::string(MOMENTKV_BIN) + " sweep submit " + file.string());
  expect_one_line_error(r, "sbatch not found on PATH");
  EXPECT_TRUE(contains(r.err, "--local N")) << r.err;
  // status works without any Slurm tool and says what it could not check.
  const test::ShellRun s = test::run_shell("PATH=/nonexistent " + std::string(MOMENTKV_BIN) + " sweep status " + file.string());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(contains(s.out, "4 tasks: 0 done, 0 running, 0 failed, 4 pending")) << s.out;
  EXPECT_TRUE(contains(s.out, "note: squeue not found")) << s.out;
}

TEST(SweepCli, ReportRefusesAShardCountedTwice) {
  const fs::path dir = test::temp_dir();
  const fs::path file = tiny_sweep(dir);
  ASSERT_EQ(test::run_momentkv("sweep run " + file.string() + " --local 2").exit_code, 0);
  // A copy of one shard's results in another folder, passed to report beside the sweep.
  const fs::path run = dir / "out/stories-needle-2k/streaming_llm_L64/shard0of2/streaming_llm_L64_shard0of2";
  fs::copy(run, dir / "copy", fs::copy_options::recursive);
  const test::ShellRun r = test::run_momentkv("report " + (dir / "out").string() + " " + (dir / "copy").string());
  expect_one_line_error(r, "shard 0/2 is in both");
}

}  // namespace
}  // namespace mkv
