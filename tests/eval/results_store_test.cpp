#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "eval/results_store.h"
#include "support/test_support.h"

namespace mkv::eval {
namespace {

nlohmann::json result_row(int64_t index) {
  return {{"index", index}, {"pred", "answer " + std::to_string(index * 7)}, {"outputs", {"x"}}};
}

// Runs samples 0..n-1, skipping those already stored (what an eval loop does on resume).
void run_all(ResultsStore& store, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!store.done(i)) store.append(result_row(i));
}

TEST(ResultsStore, ResumeAfterKillEqualsUninterruptedRun) {
  const auto dir = test::temp_dir();
  {
    ResultsStore uninterrupted(dir / "full" / "pred.jsonl");
    run_all(uninterrupted, 10);
  }
  const auto path = dir / "killed" / "pred.jsonl";
  {
    ResultsStore first_half(path);
    for (int64_t i = 0; i < 5; ++i) first_half.append(result_row(i));
  }
  // The kill: the process died while writing row 5.
  std::ofstream(path, std::ios::app) << R"({"index": 5, "pred": "ans)";

  std::ostringstream log;
  ResultsStore resumed(path, log);
  EXPECT_NE(log.str().find("incomplete last line"), std::string::npos) << log.str();
  EXPECT_EQ(resumed.size(), 5u);
  EXPECT_TRUE(resumed.done(4));
  EXPECT_FALSE(resumed.done(5));
  run_all(resumed, 10);
  EXPECT_EQ(test::read_file(path), test::read_file(dir / "full" / "pred.jsonl"));

  std::ostringstream quiet;
  ResultsStore reopened(path, quiet);
  EXPECT_TRUE(quiet.str().empty());
  EXPECT_EQ(reopened.size(), 10u);
}

// A generation cut inside a multi-byte character (here the first two bytes of "“") is stored with
// one U+FFFD, and the store holds the row as it reads back after a restart.
TEST(ResultsStore, StoresInvalidUtf8FromTheModelAsReplacementCharacters) {
  const auto path = test::temp_dir() / "pred_utf8.jsonl";
  const std::string cut = "the value is \xE2\x80";
  {
    ResultsStore store(path);
    store.append({{"index", 0}, {"pred", cut}, {"outputs", {"x"}}});
    EXPECT_EQ(store.rows().at(0)["pred"].get<std::string>(), "the value is \uFFFD");
  }
  ResultsStore reopened(path);
  ASSERT_EQ(reopened.rows().size(), 1u);
  EXPECT_EQ(reopened.rows()[0]["pred"].get<std::string>(), "the value is \uFFFD");
}

TEST(ResultsStore, RejectsBadRows) {
  const auto path = test::temp_dir() / "pred.jsonl";
  {
    ResultsStore store(path);
    store.append(result_row(0));
    EXPECT_THROW(store.append(result_row(0)), MkvError);  // duplicate index
    EXPECT_THROW(store.append({{"pred", "x"}}), MkvError);
  }
  std::ofstream(path, std::ios::app) << "{broken\n";
  try {
    ResultsStore store(path);
    FAIL() << "a malformed complete line must be an error";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
  }
  // A number past double's range is nlohmann's out_of_range, not a parse_error: it escaped as an
  // error without the file and line (found by fuzz/rows_fuzz.cpp).
  {
    std::ofstream(path, std::ios::trunc) << "{\"index\": 0, \"pred\": \"a\"}\n{\"index\": 1, \"x\": 1e999}\n";
  }
  try {
    ResultsStore store(path);
    FAIL() << "a number out of range must be an error";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("pred.jsonl:2: not valid JSON (number overflow parsing '1e999')"),
              std::string::npos)
        << e.what();
  }
}

TEST(ShardSpec, ParsesAndSelects) {
  const ShardSpec shard = ShardSpec::parse("1/3");
  EXPECT_EQ(shard.shard, 1);
  EXPECT_EQ(shard.count, 3);
  EXPECT_TRUE(shard.selects(4));
  EXPECT_FALSE(shard.selects(3));
  for (const char* bad : {"3/3", "-1/2", "1/0", "a/2", "1", "1/2/3", "", "/2", "1/"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(ShardSpec::parse(bad), MkvError);
  }
  // every index lands in exactly one of the n shards
  for (int64_t index = 0; index < 50; ++index) {
    int owners = 0;
    for (int i = 0; i < 4; ++i) owners += ShardSpec::parse(std::to_string(i) + "/4").selects(index);
    EXPECT_EQ(owners, 1);
  }
}

}  // namespace
}  // namespace mkv::eval
