// Merging shards for `report`: each shard once; duplicates and overlapping splits refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "sweep/shard_coverage.h"
#include "sweep/sweep_test_support.h"

namespace mkv::sweep {
namespace {
namespace fs = std::filesystem;

fs::path run_folder(const fs::path& dir, const std::string& shard, double score) {
  test::write_text(dir / "run.json", nlohmann::json({{"model", "m"}, {"press", "snapkv"}, {"budget", 64},
                                                     {"protocol", "snapkv"}, {"benchmark", "ruler"}, {"shard", shard}})
                                         .dump());
  test::write_text(dir / "summary.csv", fmt::format("Tasks,niah\nScore,{}\nNulls,0/5\n", score));
  return dir;
}

TEST(ShardCoverage, CompleteShardsPassAndMissingOnesWarn) {
  const fs::path dir = test::temp_dir();
  const fs::path a = run_folder(dir / "a", "0/2", 40), b = run_folder(dir / "b", "1/2", 60);
  EXPECT_TRUE(check_shard_coverage({a, b}).empty());
  const std::vector<std::string> warnings = check_shard_coverage({a});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("m / snapkv / budget 64 / niah: only shard(s) 0/2 of 2"), std::string::npos) << warnings[0];
}

TEST(ShardCoverage, TheSameShardTwiceOrOverlappingSplitsAreErrors) {
  const fs::path dir = test::temp_dir();
  const fs::path a = run_folder(dir / "a", "0/2", 40), b = run_folder(dir / "b", "1/2", 60);
  const fs::path copy = run_folder(dir / "copy", "0/2", 40);
  const std::string twice = test::error_of([&] { check_shard_coverage({a, b, copy}); });
  EXPECT_NE(twice.find("shard 0/2 is in both " + a.string() + " and " + copy.string()), std::string::npos) << twice;
  const fs::path third = run_folder(dir / "third", "1/3", 50);
  const std::string overlap = test::error_of([&] { check_shard_coverage({a, b, third}); });
  EXPECT_NE(overlap.find("different splits overlap"), std::string::npos) << overlap;
  const fs::path whole = run_folder(dir / "whole", "0/1", 50);
  EXPECT_NE(test::error_of([&] { check_shard_coverage({a, whole}); }).find("different splits"), std::string::npos);
}

}  // namespace
}  // namespace mkv::sweep
