// Library-level regressions for bad eval inputs: repeated sample indices, stray prediction rows,
// JSON errors naming FILE:LINE, unreadable files, unfinished runs in a report.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "core/error.h"
#include "eval/longbench/longbench_eval.h"
#include "eval/report/result_records.h"
#include "eval/results_store.h"
#include "eval/ruler/ruler_sample.h"
#include "support/test_support.h"

namespace mkv::eval {
namespace {
namespace fs = std::filesystem;

using test::error_of;

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(EvalBadInput, RulerRepeatedIndexNamesFileLineAndIndex) {
  const fs::path f = test::temp_dir() / "dup.jsonl";
  write(f, R"({"index": 5, "input": "a", "outputs": ["b"]})" "\n"
           R"({"index": 6, "input": "a", "outputs": ["b"]})" "\n"
           R"({"index": 5, "input": "c", "outputs": ["d"]})" "\n");
  const std::string e = error_of([&] { ruler::read_ruler_jsonl(f); });
  EXPECT_NE(e.find(f.string() + ":3: index 5 appears twice (first on line 1)"), std::string::npos) << e;
}

TEST(EvalBadInput, GeneratedSamplesWithInvalidUtf8AreWrittenWithReplacementCharacters) {
  ruler::RulerSample s;
  s.input = "essay \xff\xfe text";
  s.outputs = {"x"};
  const std::string line = ruler::to_jsonl_line(s);
  EXPECT_NE(line.find("essay \xef\xbf\xbd"), std::string::npos) << line;
}

TEST(EvalBadInput, JsonlParseErrorsNameFileAndLineWithoutTheLibraryTag) {
  const fs::path dir = test::temp_dir();
  write(dir / "r.jsonl", "\n" R"({"index": 0, "input": "a", "outputs": ["b"]})" "\n{\"index\": }\n");
  std::string e = error_of([&] { ruler::read_ruler_jsonl(dir / "r.jsonl"); });
  EXPECT_EQ(e.rfind((dir / "r.jsonl").string() + ":3: not valid JSON (", 0), 0u) << e;
  EXPECT_EQ(e.find("[json.exception"), std::string::npos) << e;

  write(dir / "lb.jsonl", R"({"input": "q", "context": "c", "answers": ["a"]})" "\n[1,\n");
  e = error_of([&] { read_longbench_jsonl(dir / "lb.jsonl"); });
  EXPECT_EQ(e.rfind((dir / "lb.jsonl").string() + ":2: not valid JSON (", 0), 0u) << e;
  e = error_of([&] { read_longbench_jsonl(dir); });
  EXPECT_NE(e.find("is a directory"), std::string::npos) << e;
  e = error_of([&] { ruler::read_ruler_jsonl(dir); });
  EXPECT_NE(e.find("is a directory"), std::string::npos) << e;
}

TEST(EvalBadInput, StoredPredictionsMustBelongToTheData) {
  const fs::path f = test::temp_dir() / "pred.jsonl";
  write(f, R"({"index": 0, "pred": "x", "outputs": ["y"]})" "\n\n" R"({"index": 9, "pred": "x", "outputs": ["y"]})"
           "\n");
  ResultsStore store(f);
  EXPECT_EQ(store.line_of(1), 3);
  store.require_indices_in({0, 9}, "the data");
  const std::string e = error_of([&] { store.require_indices_in({0, 1, 2}, "the samples of task t"); });
  EXPECT_NE(e.find(f.string() + ":3: prediction for index 9, which is not in the samples of task t"),
            std::string::npos)
      << e;
  store.require_field("pred", "string");
  store.require_field("outputs", "array of strings");
  store.append({{"index", 4}});
  EXPECT_EQ(store.line_of(2), 4);
  const std::string missing = error_of([&] { store.require_field("pred", "string"); });
  EXPECT_NE(missing.find(f.string() + ":4: a result row needs field 'pred' (string)"), std::string::npos) << missing;
}

TEST(EvalBadInput, ResultsFileThatIsADirectoryIsAnError) {
  const fs::path dir = test::temp_dir() / "pred.jsonl";
  fs::create_directories(dir);
  const std::string e = error_of([&] { ResultsStore store(dir); });
  EXPECT_NE(e.find("is a directory"), std::string::npos) << e;
}

TEST(EvalBadInput, UnfinishedRunsAreRecognisedAndJsonErrorsNameTheFile) {
  const fs::path dir = test::temp_dir();
  fs::create_directories(dir / "done");
  fs::create_directories(dir / "running");
  write(dir / "done" / "run.json", R"({"model": "m", "press": "full", "budget": 0})");
  write(dir / "done" / "summary.csv", "Tasks,a\nScore,50\nNulls,0/10\n");
  write(dir / "running" / "run.json", R"({"model": "m", "press": "full", "budget": 0})");
  EXPECT_FALSE(report::is_unfinished_run(dir / "done"));
  EXPECT_TRUE(report::is_unfinished_run(dir / "running"));
  EXPECT_EQ(report::read_result_folder(dir / "done").size(), 1u);
  std::string e = error_of([&] { report::read_result_folder(dir / "running"); });
  EXPECT_NE(e.find("unfinished run"), std::string::npos) << e;

  write(dir / "done" / "run.json", "{\"model\": ");
  e = error_of([&] { report::read_result_folder(dir / "done"); });
  EXPECT_EQ(e.rfind((dir / "done" / "run.json").string() + ": not valid JSON (", 0), 0u) << e;
  write(dir / "done" / "run.json", R"({"model": "m", "press": "full", "budget": 0})");
  write(dir / "done" / "summary.csv", "Tasks,a\nScore,5x\nNulls,0/10\n");
  e = error_of([&] { report::read_result_folder(dir / "done"); });
  EXPECT_NE(e.find("score '5x'"), std::string::npos) << e;
  write(dir / "done" / "summary.csv", "Tasks,a\nScore,50\nNulls,0/ten\n");
  e = error_of([&] { report::read_result_folder(dir / "done"); });
  EXPECT_NE(e.find("'ten'"), std::string::npos) << e;
}

}  // namespace
}  // namespace mkv::eval
