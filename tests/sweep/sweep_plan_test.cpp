// Tasks of a sweep: index → (model, press setting, shard), their folders, the eval command each runs.
#include <gtest/gtest.h>

#include <set>

#include "support/test_support.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_test_support.h"

namespace mkv::sweep {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

// Two models (the needle model and a copy), full + two presses at two budgets, three shards.
SweepSpec two_model_sweep(const fs::path& dir) {
  fs::copy_file(test::needle_model(), dir / "copy.gguf");
  test::needle_samples(dir / "samples.jsonl", 6);
  const json j = {{"models", {test::needle_model().string(), "copy.gguf"}},
                  {"benchmark", {{"name", "ruler"}, {"data", "samples.jsonl"}}},
                  {"presses", {"full", "snapkv", "streaming_llm"}},
                  {"budgets", {64, 128}},
                  {"shards", 3},
                  {"output", "out"}};
  return parse_sweep(j.dump(), dir / "grid.json");
}

TEST(SweepPlan, TaskIndexIsModelThenSettingThenShard) {
  const fs::path dir = test::temp_dir();
  const SweepSpec spec = two_model_sweep(dir);
  const std::vector<SweepTask> tasks = plan_tasks(spec);
  constexpr int kSettings = 1 + 2 * 2;  // full once, two presses at two budgets
  ASSERT_EQ(tasks.size(), 2u * kSettings * 3);
  const std::vector<std::string> labels = {"full", "snapkv_L64", "snapkv_L128", "streaming_llm_L64", "streaming_llm_L128"};
  std::set<fs::path> dirs;
  for (const SweepTask& t : tasks) {
    const int setting = (t.index / 3) % kSettings;
    EXPECT_EQ(t.index, (static_cast<int>(t.model) * kSettings + setting) * 3 + t.shard);
    EXPECT_EQ(t.model, static_cast<std::size_t>(t.index / (3 * kSettings)));
    EXPECT_EQ(t.shard, t.index % 3);
    EXPECT_EQ(t.shards, 3);
    EXPECT_EQ(t.setting.label, labels[static_cast<std::size_t>(setting)]);
    EXPECT_EQ(t.setting.budget, setting == 0 ? 0 : (setting % 2 == 1 ? 64 : 128));
    const std::string model = t.model == 0 ? "stories-needle-2k" : "copy";
    const std::string shard = "shard" + std::to_string(t.shard) + "of3";
    EXPECT_EQ(t.dir, dir / "out" / model / t.setting.label / shard);
    EXPECT_EQ(t.run_dir, t.dir / (t.setting.label + "_" + shard));
    EXPECT_EQ(t.score_file, t.run_dir / "summary.csv");
    EXPECT_TRUE(dirs.insert(t.dir).second) << "two tasks share " << t.dir;
  }
}

TEST(SweepPlan, EachTaskRunsEvalOnItsShardIntoItsFolder) {
  const fs::path dir = test::temp_dir();
  const SweepSpec spec = two_model_sweep(dir);
  const std::vector<SweepTask> tasks = plan_tasks(spec);
  const auto args_of = [&](int index) { return eval_arguments(spec, tasks[static_cast<std::size_t>(index)]); };
  const std::vector<std::string> full = args_of(1);  // model 0, full, shard 1
  const std::vector<std::string> expected_head = {"eval", "ruler", "-m", test::needle_model().string(), "--press", "full",
                                                  "--shard", "1/3"};
  EXPECT_EQ(std::vector<std::string>(full.begin(), full.begin() + 8), expected_head);
  EXPECT_EQ(std::count(full.begin(), full.end(), "--budgets"), 0);
  EXPECT_EQ(full[full.size() - 2], "-o");
  EXPECT_EQ(full.back(), tasks[1].dir.string());
  const std::vector<std::string> snap = args_of(5 * 3 + 3 + 2);  // model 1, snapkv L64, shard 2
  const auto at = [&](const std::string& flag) { return *(std::find(snap.begin(), snap.end(), flag) + 1); };
  EXPECT_EQ(at("-m"), (dir / "copy.gguf").string());
  EXPECT_EQ(at("--press"), "snapkv");
  EXPECT_EQ(at("--budgets"), "64");
  EXPECT_EQ(at("--shard"), "2/3");
  EXPECT_EQ(at("--data"), (dir / "samples.jsonl").string());
  EXPECT_EQ(at("-t"), "1");
}

TEST(SweepPlan, IndexRangesRoundTrip) {
  EXPECT_EQ(index_ranges({0, 1, 2, 3, 5, 7, 8}), "0-3,5,7-8");
  EXPECT_EQ(index_ranges({4}), "4");
  EXPECT_EQ(parse_index_ranges("0-3,5,7-8", 10, "--array"), (std::vector<int>{0, 1, 2, 3, 5, 7, 8}));
  EXPECT_EQ(parse_index_ranges("5,1,1-2", 10, "--array"), (std::vector<int>{1, 2, 5}));
  EXPECT_NE(test::error_of([] { parse_index_ranges("9", 8, "--array"); }).find("--array: task 9 does not exist (the sweep has tasks 0-7)"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { parse_index_ranges("a", 8, "--array"); }).find("'a' is not a task index"), std::string::npos);
  EXPECT_NE(test::error_of([] { parse_index_ranges("3-1", 8, "--array"); }).find("'3-1' is an empty range"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { parse_index_ranges("", 8, "--array"); }).find("--array"), std::string::npos);
}

}  // namespace
}  // namespace mkv::sweep
