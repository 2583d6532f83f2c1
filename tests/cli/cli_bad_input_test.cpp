// Regression tests for reproduced bad inputs: each must end with one "error: ..." line naming the
// problem (flag, file, line), a non-zero exit, and never a crash, a hang or a raw library message.
// Every run has a time limit (a hang fails the test instead of stalling the suite).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/timed_run.h"
#include "core/text_file.h"
#include "support/test_support.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;
using Args = std::vector<std::string>;

test::TimedResult run(const Args& args, double timeout = 60) {
  test::TimedOptions o;
  o.timeout_seconds = timeout;
  return test::run_momentkv_timed(args, o);
}

// The run failed with exactly one error line (warnings may precede) that contains every fragment.
void expect_error(const Args& args, const std::vector<std::string>& fragments, double timeout = 60) {
  const test::TimedResult r = run(args, timeout);
  const std::string problem = test::error_convention_problem(r);
  EXPECT_EQ(problem, "") << test::command_line(args) << "\nstderr: " << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << test::command_line(args) << "\n" << r.err;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A tiny random-weight model (no shared assets needed) and a few input files, made once.
class CliBadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("momentkv-bad-input-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    const auto r = test::run_momentkv_timed({"make-model", "--shape", "tiny-llama", "-o", model()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    write(path("text.txt"), "Tom had a red ball. He liked to play with it in the park every day.\n");
    write(path("one.jsonl"), R"({"index": 0, "input": "Tom had a red ball.\nWhat did Tom have? Tom had a", "outputs": ["ball"]})"
                             "\n");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string model() { return path("tiny.gguf"); }
  static std::string fresh_dir(const std::string& name) {
    fs::remove_all(*dir_ / name);
    return path(name);
  }

  static fs::path* dir_;
};
fs::path* CliBadInput::dir_ = nullptr;

// (a) -t: 65536 crashed in the OpenMP matmul, 32768 printed libgomp's own message.
TEST_F(CliBadInput, ThreadCountAboveTheCapIsRejected) {
  for (const char* t : {"65536", "32768", "100000"})
    expect_error({"generate", "-m", model(), "-t", t, "-p", "hi", "-n", "2"}, {std::string("-t ") + t, "limit"});
  expect_error({"logits", "-m", model(), "-t", "65536", "--tokens", "1,2", "-o", path("l.bin")}, {"-t 65536"});
  expect_error({"bench", "-m", model(), "-t", "65536", "-p", "4", "-n", "0", "-r", "1", "--no-probe"}, {"65536"});
  // A later entry of bench's thread list goes through the same cap.
  expect_error({"bench", "-m", model(), "-t", "1,65536", "-p", "4", "-n", "0", "-r", "1", "--no-probe"},
               {"thread count 65536"});
}

// (b) /dev/zero as a text file grew memory forever; a directory ran with an empty prompt.
TEST_F(CliBadInput, DevZeroAndDirectoriesAsTextFiles) {
  const std::string dir = path("");
  expect_error({"generate", "-m", model(), "-f", "/dev/zero", "-n", "2"}, {"/dev/zero", "not a regular file"});
  expect_error({"generate", "-m", model(), "-f", dir, "-n", "2"}, {dir, "is a directory"});
  expect_error({"tokenize", "-m", model(), "-f", "/dev/zero"}, {"/dev/zero"});
  expect_error({"tokenize", "-m", model(), "-f", dir}, {"is a directory"});
  expect_error({"logits", "-m", model(), "--tokens-file", "/dev/zero", "-o", path("l.bin")}, {"/dev/zero"});
  expect_error({"kl", "-m", model(), "-f", "/dev/zero", "--windows", "1"}, {"/dev/zero"});
  expect_error({"kl", "-m", model(), "-f", dir, "--windows", "1"}, {"is a directory"});
  expect_error({"fidelity", "-m", model(), "-f", "/dev/zero", "--windows", "1", "-o", fresh_dir("fid")}, {"/dev/zero"});
  expect_error({"eval", "ruler", "-m", model(), "--data", "/dev/zero", "-o", fresh_dir("r1")}, {"/dev/zero"});
  expect_error({"eval", "ruler", "-m", model(), "--tasks", "niah_single_2", "--essay", "/dev/zero", "--length", "2048", "--samples", "1", "-o",
                fresh_dir("r2")},
               {"/dev/zero"});
  expect_error({"eval", "longbench", "-m", model(), "--data", "/dev/zero", "--dataset2prompt", "/dev/zero",
                "--dataset2maxlen", "/dev/zero", "-o", fresh_dir("lb")},
               {"/dev/zero"});
  expect_error({"eval", "ruler", "-m", model(), "--data", dir, "-o", fresh_dir("r3")}, {"is a directory"});
}

// (c) a huge --length grew haystacks for ever before the context was checked.
TEST_F(CliBadInput, RulerLengthAboveTheContext) {
  expect_error({"eval", "ruler", "-m", model(), "--essay", path("text.txt"), "--length", "99999999", "-o",
                fresh_dir("r4")},
               {"--length 99999999", "context of 4096"});
  expect_error({"eval", "ruler", "-m", model(), "--essay", path("text.txt"), "--length", "8192", "-c", "1024", "-o",
                fresh_dir("r5")},
               {"--length 8192", "1024", "-c"});
  expect_error({"eval", "ruler", "-m", model(), "--essay", path("text.txt"), "--length", "256", "--samples",
                "999999999", "-o", fresh_dir("r6")},
               {"--samples 999999999"});
}

// (d) -ub 1000000000 printed std::bad_alloc.
TEST_F(CliBadInput, UbatchAboveTheCap) {
  expect_error({"generate", "-m", model(), "-ub", "1000000000", "-p", "hi", "-n", "2"}, {"-ub 1000000000", "65536"});
  expect_error({"generate", "-m", model(), "-ub", "8192", "-p", "hi", "-n", "2"}, {"-ub 8192", "context size 4096"});
  expect_error({"generate", "-m", model(), "-ub", "2048", "-c", "1024", "-p", "hi", "-n", "2"},
               {"-ub 2048", "context size 1024", "-c"});
  // The default -ub (512) stays valid for a context below it.
  const auto ok = run({"generate", "-m", model(), "-c", "256", "-p", "hi", "-n", "2", "--temp", "0"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// (e) a repeated index silently dropped a sample; a stray prediction row was scored.
TEST_F(CliBadInput, DuplicateIndexAndStrayPredictionRows) {
  write(path("dup.jsonl"), R"({"index": 3, "input": "a\nWhat? b", "outputs": ["b"]})"
                           "\n\n"
                           R"({"index": 3, "input": "c\nWhat? d", "outputs": ["d"]})"
                           "\n");
  expect_error({"eval", "ruler", "-m", model(), "--data", path("dup.jsonl"), "-o", fresh_dir("r7")},
               {path("dup.jsonl") + ":3:", "index 3 appears twice", "line 1"});

  const std::string out = fresh_dir("r8");
  auto r = run({"eval", "ruler", "-m", model(), "--data", path("one.jsonl"), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path pred = fs::path(out) / "full" / "pred" / "one.jsonl";
  ASSERT_TRUE(fs::exists(pred));
  std::ofstream(pred, std::ios::app) << R"({"index": 42, "pred": "ball", "outputs": ["ball"]})" << "\n";
  expect_error({"eval", "ruler", "-m", model(), "--data", path("one.jsonl"), "-o", out},
               {pred.string() + ":2:", "index 42", "not in"});
  // A stored row without the fields scoring reads names the file and line too.
  write(pred, R"({"index": 0})" "\n");
  expect_error({"eval", "ruler", "-m", model(), "--data", path("one.jsonl"), "-o", out},
               {pred.string() + ":1:", "'pred'"});
}

// (f) JSON errors printed [json.exception...] or basic_filebuf::underflow without the file.
TEST_F(CliBadInput, JsonErrorsNameFileAndLine) {
  write(path("bad.jsonl"), R"({"index": 0, "input": "a", "outputs": ["b"]})" "\n" R"({"index": 1, "input": )" "\n");
  expect_error({"eval", "ruler", "-m", model(), "--data", path("bad.jsonl"), "-o", fresh_dir("r9")},
               {path("bad.jsonl") + ":2:", "not valid JSON"});
  write(path("utf8.jsonl"), "{\"index\": 0, \"input\": \"\xff\xfe\", \"outputs\": [\"b\"]}\n");
  expect_error({"eval", "ruler", "-m", model(), "--data", path("utf8.jsonl"), "-o", fresh_dir("r10")},
               {path("utf8.jsonl") + ":1:"});

  const fs::path lb = fs::path(fresh_dir("lbdata"));
  fs::create_directories(lb);
  write(lb / "qasper.jsonl", R"({"input": "q", "context": "c", "answers": ["a"]})" "\n");
  write(path("d2p.json"), R"({"qasper": "{context} {input}",)");
  write(path("d2m.json"), R"({"qasper": 8})");
  expect_error({"eval", "longbench", "-m", model(), "--data", lb.string(), "--dataset2prompt", path("d2p.json"),
                "--dataset2maxlen", path("d2m.json"), "-o", fresh_dir("lbout")},
               {path("d2p.json") + ":", "not valid JSON"});
  expect_error({"eval", "longbench", "-m", model(), "--data", lb.string(), "--dataset2prompt", path(""),
                "--dataset2maxlen", path("d2m.json"), "-o", fresh_dir("lbout")},
               {"is a directory"});

  const fs::path rep = fs::path(fresh_dir("rep"));
  fs::create_directories(rep / "a");
  write(rep / "a" / "scores.jsonl",
        R"({"model": "m", "press": "full", "budget": 0, "task": "t", "score": 50, "n": 2})" "\nnot json\n");
  expect_error({"report", rep.string()}, {(rep / "a" / "scores.jsonl").string() + ":2:", "not valid JSON"});
  fs::remove(rep / "a" / "scores.jsonl");
  write(rep / "a" / "run.json", "[1, 2");
  expect_error({"report", rep.string()}, {(rep / "a" / "run.json").string() + ":", "not valid JSON"});
  write(rep / "a" / "run.json", "[1, 2]");
  expect_error({"report", rep.string()}, {"run.json must be a JSON object"});
  fs::remove(rep / "a" / "run.json");
  fs::create_directories(rep / "a" / "run.json");  // a directory where a file belongs
  expect_error({"report", rep.string()}, {"is a directory"});
}

// (g) a NUL in a GGUF string cut the message; a bad tensor count was blamed on the last key.
TEST_F(CliBadInput, GgufNulBytesAndTensorCount) {
  const auto gguf = [](uint64_t n_tensors, const std::string& arch) {
    std::string b = "GGUF";
    const auto u32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    const auto u64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    const auto str = [&](const std::string& s) { u64(s.size()), b += s; };
    u32(3), u64(n_tensors), u64(1);
    str("general.architecture"), u32(8), str(arch);
    return b;
  };
  write(path("nul.gguf"), gguf(0, std::string("lla\0ma", 6)));
  expect_error({"generate", "-m", path("nul.gguf"), "-p", "hi"}, {"'lla\\x00ma'"});
  write(path("count.gguf"), gguf(5, "llama"));
  const auto r = run({"generate", "-m", path("count.gguf"), "-p", "hi"});
  EXPECT_EQ(test::error_convention_problem(r), "") << r.err;
  EXPECT_NE(r.err.find("tensor count 5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tensor table"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("general.architecture"), std::string::npos) << r.err;
}

// (h) report refused a folder holding one unfinished run instead of reporting the finished ones.
TEST_F(CliBadInput, ReportSkipsUnfinishedRunsWithAWarning) {
  const fs::path rep = fs::path(fresh_dir("rep2"));
  fs::create_directories(rep / "done");
  fs::create_directories(rep / "running");
  write(rep / "done" / "run.json", R"({"model": "m", "press": "snapkv", "budget": 64})");
  write(rep / "done" / "summary.csv", "Tasks,niah\nScore,75.00\nNulls,0/4\n");
  write(rep / "running" / "run.json", R"({"model": "m", "press": "snapkv", "budget": 128})");
  const auto r = run({"report", rep.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("75.00"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.rfind("warning: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find((rep / "running").string()), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Only unfinished runs: an error (after the warning), not an empty report.
  expect_error({"report", (rep / "running").string()}, {"no finished runs"});
  // A malformed summary.csv count names the file instead of printing std::stoll.
  write(rep / "done" / "summary.csv", "Tasks,niah\nScore,75.00\nNulls,0/x\n");
  expect_error({"report", (rep / "done").string()}, {(rep / "done" / "summary.csv").string()});
}

// (i) An empty value was read as 0 (`--temp ""` ran greedy, `-n ""` generated nothing) or, for -m,
// as "not given" (the default model ran instead).
TEST_F(CliBadInput, EmptyValuesAreRejected) {
  const Args base = {"generate", "-p", "hi", "-c", "256"};
  for (const Args& flag : {Args{"--temp", ""}, Args{"-n", ""}, Args{"--kv-budget", ""}, Args{"-t", ""},
                           Args{"--compression-ratio", ""}}) {
    Args args = base;
    args.insert(args.end(), {"-m", model()});
    args.insert(args.end(), flag.begin(), flag.end());
    expect_error(args, {flag[0], "an empty value"});
  }
  Args args = base;
  args.insert(args.end(), {"-m", ""});
  expect_error(args, {"--model", "an empty value"});
  expect_error({"eval", "ruler", "-m", model(), "--data", path("one.jsonl"), "-o", ""}, {"--output", "an empty value"});
}

// (j) Output lost on a full disk: -o files and stdout were written without checking, exit 0.
TEST_F(CliBadInput, AFullDiskIsAnError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const auto kl = run({"kl", "-m", model(), "-f", path("text.txt"), "--prompt-tokens", "8", "--continuation-tokens", "4",
                       "--windows", "1", "--press", "snapkv", "--budgets", "4", "-o", "/dev/full"});
  EXPECT_EQ(kl.exit_code, 1) << kl.err;  // after the progress lines
  EXPECT_NE(kl.err.find("error: cannot write -o '/dev/full': No space left on device"), std::string::npos) << kl.err;
  const std::string err = path("stdout_full.err");
  for (const std::string command : {"generate -p hi -n 2 --temp 0", "tokenize -p hi"}) {
    const int status = std::system(fmt::format("timeout 60 '{}' {} -m '{}' > /dev/full 2> '{}'", MOMENTKV_BIN, command,
                                               model(), err).c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << command << ": status " << status;
    const std::string text = read_text_file(err);
    EXPECT_NE(text.find("error: cannot write to standard output: No space left on device"), std::string::npos) << text;
  }
}

// (k) Resuming a run folder with another model mixed both runs' predictions in one file; a run
// stopped by --max-samples wrote summary.csv, which report took for a finished run's score.
TEST_F(CliBadInput, ARunFolderHoldsOneConfigurationAndOnlyAFinishedRunIsScored) {
  write(path("two.jsonl"), R"({"index": 0, "input": "Tom had a red ball.\nWhat did Tom have? Tom had a", "outputs": ["ball"]})"
                           "\n"
                           R"({"index": 1, "input": "Ann had a blue cup.\nWhat did Ann have? Ann had a", "outputs": ["cup"]})"
                           "\n");
  const std::string out = fresh_dir("resume");
  const Args run_args = {"eval", "ruler", "--data", path("two.jsonl"), "--press", "snapkv", "--budgets", "4", "-o", out};
  Args first = run_args;
  first.insert(first.end(), {"-m", model(), "--max-samples", "1"});
  auto r = run(first);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path run_dir = fs::path(out) / "snapkv_L4";
  ASSERT_TRUE(fs::exists(run_dir / "run.json"));
  EXPECT_FALSE(fs::exists(run_dir / "summary.csv"));
  expect_error({"report", out}, {"no finished runs"});

  const std::string other_model = path("other.gguf");
  ASSERT_EQ(test::run_momentkv_timed({"make-model", "--shape", "tiny-llama", "--seed", "2", "-o", other_model}).exit_code, 0);
  Args other = run_args;
  other.insert(other.end(), {"-m", other_model});
  expect_error(other, {run_dir.string(), "another run", "model", "\"tiny\"", "\"other\""});
  Args longer_context = run_args;
  longer_context.insert(longer_context.end(), {"-m", model(), "-c", "256"});
  expect_error(longer_context, {"ctx 0 there, 256 now"});

  Args resumed = run_args;
  resumed.insert(resumed.end(), {"-m", model()});
  r = run(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_text_file(run_dir / "summary.csv").find("Nulls,0/2"), std::string::npos);
  // Stopped again before the end (a new task file): the earlier summary.csv goes, it scored less.
  write(path("two.jsonl"), read_text_file(path("two.jsonl")) +
                               R"({"index": 2, "input": "Sam had a green hat.\nWhat did Sam have? Sam had a", "outputs": ["hat"]})"
                               "\n");
  Args partial = resumed;
  partial.insert(partial.end(), {"--max-samples", "0"});
  r = run(partial);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(run_dir / "summary.csv"));
}

// (l) A negative sample index was skipped by every --shard i/n (index % n is negative in C++), and
// 2^64-1 was stored as -1.
TEST_F(CliBadInput, SampleIndicesMustBeNonNegative) {
  for (const char* index : {"-3", "18446744073709551615"}) {
    write(path("neg.jsonl"), fmt::format(R"({{"index": {}, "input": "a\nWhat? b", "outputs": ["b"]}})", index) + "\n");
    expect_error({"eval", "ruler", "-m", model(), "--data", path("neg.jsonl"), "-o", fresh_dir("neg")},
                 {path("neg.jsonl") + ":1:", "'index' must be an integer from 0"});
  }
}

// (m) bench with nothing to time printed an empty table, --nc-ab without a press at depth timed
// nothing, and generate echoed a prompt too long for the context before its error.
TEST_F(CliBadInput, RunsThatWouldDoNothingSaySo) {
  expect_error({"bench", "-m", model(), "-p", "0", "-n", "0", "--no-probe"}, {"-p and -n are all 0"});
  expect_error({"bench", "-m", model(), "-p", "0", "-n", "4", "--nc-ab", "--no-probe"}, {"--nc-ab", "--press"});
  expect_error({"bench", "-m", model(), "-p", "0", "-n", "4", "--depth0-ab", "--press", "snapkv", "--kv-budget", "8",
                "--no-probe"},
               {"--depth0-ab", "-d D > 0"});
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "Tom had a red ball. ";
  const auto r = run({"generate", "-m", model(), "-c", "64", "-p", long_prompt, "-n", "2"});
  EXPECT_EQ(test::error_convention_problem(r), "") << r.err;
  EXPECT_NE(r.err.find("does not fit the context of 64"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// (n) kl named 'full' as having an unknown parameter 'nc', reported a budget above the prompt as the
// tokens retained, and said "-o file/x.json": the folder 'file' does not exist.
TEST_F(CliBadInput, KlMessagesAndTheRetainedColumn) {
  const Args kl = {"kl", "-m", model(), "-f", path("text.txt"), "--prompt-tokens", "8", "--continuation-tokens", "4",
                   "--windows", "1"};
  Args full = kl;
  full.insert(full.end(), {"--press", "full", "--budgets", "4"});
  expect_error(full, {"press 'full' keeps every token", "nothing to measure"});
  Args into_a_file = kl;
  into_a_file.insert(into_a_file.end(), {"--press", "snapkv", "--budgets", "4", "-o", path("text.txt") + "/kl.json"});
  expect_error(into_a_file, {path("text.txt") + "' is not a folder"});
  Args above = kl;
  above.insert(above.end(), {"--press", "snapkv:nc=0", "--budgets", "1000"});
  const auto r = run(above);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| snapkv:nc=0 | off | 1000 | 8 |"), std::string::npos) << r.out;  // retained: the prompt's 8
}

}  // namespace
}  // namespace mkv
