// A seeded, bounded fuzz of the momentkv command line: every subcommand is run on flags, values
// and input files that are valid, odd or invalid by construction (regular, empty, directory,
// /dev/zero, truncated GGUF, huge and negative numbers, invalid UTF-8, malformed JSON/JSONL).
//
// Each case runs the binary as a child with a time limit and a memory limit. A case fails on a
// signal (crash), a timeout (hang), exit 0 on an input that is invalid by construction, exit
// non-zero on a base case that must work, or a failing run whose stderr is not exactly one
// "error: ..." line (after any "warning: " lines) or shows a raw library message.
//
// The case list is a pure function of kSeed and kRandomCases: every run sees the same cases and
// each failure prints the exact command line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cli/timed_run.h"
#include "support/test_support.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;
using Args = std::vector<std::string>;

constexpr uint32_t kSeed = 20240611;
constexpr int kRandomCases = 40;  // on top of the deterministic cases (each base, each mutation alone)
constexpr double kCaseTimeoutSeconds = 20;

enum class Expect { Pass, Fail, Either };

struct Case {
  Args args;
  Expect expect = Expect::Either;
};

// One way to change one flag: set `flag` to `value` (empty flag: append `value` as extra words).
struct Mutation {
  Mutation(std::string f, std::string v, Expect e) : flag(std::move(f)), value(std::move(v)), expect(e) {}
  std::string flag;
  std::string value;
  Expect expect = Expect::Either;  // Fail: invalid by construction; Either: may be valid
};

// A subcommand: a cheap base invocation that must succeed, and its mutations.
struct Command {
  std::string name;
  Args base;
  std::vector<Mutation> mutations;
};

// Sets flag=value in args (replacing the value after an existing flag), or appends both.
Args with_flag(Args args, const std::string& flag, const std::string& value) {
  if (flag.empty()) {
    args.push_back(value);
    return args;
  }
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) {
      args[i + 1] = value;
      return args;
    }
  args.push_back(flag);
  args.push_back(value);
  return args;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

class CliFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("momentkv-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "adir");
    fs::create_directories(dir_ / "out");
    auto r = test::run_momentkv_timed({"make-model", "--shape", "tiny-llama", "-o", p("tiny.gguf")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_momentkv_timed({"make-model", "--shape", "tiny-qwen3", "--type", "Q8_0", "-o", p("qwen.gguf")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string model = test::read_file(dir_ / "tiny.gguf");
    write(dir_ / "trunc.gguf", model.substr(0, model.size() / 2));
    write(dir_ / "trunc_header.gguf", model.substr(0, 10));
    write(dir_ / "trunc_meta.gguf", model.substr(0, 300));
    std::string garbage(4096, '\0');
    std::mt19937 bytes(kSeed);
    for (char& c : garbage) c = static_cast<char>(bytes() & 0xff);
    write(dir_ / "garbage.gguf", "GGUF" + garbage);
    write(dir_ / "garbage.bin", garbage);
    write(dir_ / "empty.txt", "");
    std::string story;
    for (int i = 0; i < 40; ++i)
      story += "Tom had a red ball. He liked to play with it in the park. One day the ball rolled away. ";
    write(dir_ / "text.txt", story);
    write(dir_ / "utf8.txt", "Tom \xff\xfe had a \xc3( ball \xed\xa0\x80 and \xf4\x90\x80\x80.\n");
    write(dir_ / "nul.txt", std::string("Tom\0had\0a ball\n", 16));
    write(dir_ / "tokens.txt", "[1, 2, 3]");
    write(dir_ / "tokens_bad.txt", "1, 2, x");
    write(dir_ / "tokens_big.txt", "1, 99999999");
    // RULER rows
    const std::string row0 = R"({"index": 0, "input": "Tom had a red ball.\nWhat did Tom have? Tom had a", "outputs": ["ball"]})";
    const std::string row1 = R"({"index": 1, "input": "Sue had a cat.\nWhat did Sue have? Sue had a", "outputs": ["cat"]})";
    write(dir_ / "ruler.jsonl", row0 + "\n" + row1 + "\n");
    write(dir_ / "ruler_bad.jsonl", row0 + "\n{\"index\": 1, \"input\": \n");
    write(dir_ / "ruler_dup.jsonl", row0 + "\n" + row0 + "\n");
    write(dir_ / "ruler_types.jsonl", R"({"index": "0", "input": 5, "outputs": []})" "\n");
    write(dir_ / "ruler_utf8.jsonl", "{\"index\": 0, \"input\": \"\xff\xfe\", \"outputs\": [\"b\"]}\n");
    write(dir_ / "ruler_array.jsonl", "[1, 2, 3]\n");
    // LongBench
    fs::create_directories(dir_ / "lb");
    write(dir_ / "lb" / "qasper.jsonl", R"({"input": "What did Tom have?", "context": "Tom had a red ball.", "answers": ["ball"], "length": 5})" "\n");
    fs::create_directories(dir_ / "lb_bad");
    write(dir_ / "lb_bad" / "qasper.jsonl", "{\"input\": 1}\nnot json\n");
    write(dir_ / "d2p.json", R"({"qasper": "{context}\nQuestion: {input}\nAnswer:"})");
    write(dir_ / "d2m.json", R"({"qasper": 4})");
    write(dir_ / "d2p_bad.json", R"({"qasper": "{context} {input}",)");
    write(dir_ / "d2p_field.json", R"({"qasper": "{nosuchfield}"})");
    write(dir_ / "d2m_neg.json", R"({"qasper": -5})");
    write(dir_ / "d2m_huge.json", R"({"qasper": 99999999999})");
    // sweep files (their models and data relative to the file's folder)
    write(dir_ / "sw.jsonl", R"({"index": 0, "input": "hello", "outputs": ["x"], "length": 10})" "\n"
                             R"({"index": 1, "input": "there", "outputs": ["y"], "length": 10})" "\n");
    const std::string sweep_head = R"({"name": "fz", "models": ["tiny.gguf"], "benchmark": {"name": "ruler", "data": ["sw.jsonl"]}, )";
    write(dir_ / "sw_ok.json", sweep_head + R"("presses": ["snapkv", "full"], "budgets": [16], "shards": 2, "output": "sw_out"})");
    write(dir_ / "sw_types.json", sweep_head + R"("presses": "snapkv", "budgets": [16.5], "shards": "2", "output": 3})");
    write(dir_ / "sw_unknown.json", sweep_head + R"("presses": ["snapkv"], "budget": [16], "output": "sw_out"})");
    write(dir_ / "sw_press.json", sweep_head + R"("presses": ["snapkv:windw=3"], "budgets": [16], "output": "sw_out"})");
    write(dir_ / "sw_budget.json", sweep_head + R"("presses": ["snapkv"], "budgets": [0, -4], "output": "sw_out"})");
    write(dir_ / "sw_shards.json", sweep_head + R"("presses": ["snapkv"], "budgets": [16], "shards": 99, "output": "sw_out"})");
    write(dir_ / "sw_model.json", R"({"models": ["garbage.gguf"], "benchmark": {"name": "ruler", "data": ["sw.jsonl"]}, "presses": ["full"], "output": "o"})");
    write(dir_ / "sw_trunc.json", sweep_head);
    // report folders
    fs::create_directories(dir_ / "rep_ok" / "a");
    write(dir_ / "rep_ok" / "a" / "run.json", R"({"model": "m", "press": "snapkv", "budget": 64})");
    write(dir_ / "rep_ok" / "a" / "summary.csv", "Tasks,niah\nScore,75.00\nNulls,0/4\n");
    fs::create_directories(dir_ / "rep_ok" / "b");
    write(dir_ / "rep_ok" / "b" / "run.json", R"({"model": "m", "press": "snapkv", "budget": 128})");  // unfinished
    fs::create_directories(dir_ / "rep_bad" / "a");
    write(dir_ / "rep_bad" / "a" / "scores.jsonl", "{\"model\": \"m\"}\nnot json\n");
    fs::create_directories(dir_ / "rep_csv" / "a");
    write(dir_ / "rep_csv" / "a" / "run.json", R"({"model": "m", "press": "snapkv", "budget": 64})");
    write(dir_ / "rep_csv" / "a" / "summary.csv", "Tasks,niah,x\nScore,abc\nNulls,0/q\n");
    fs::create_directories(dir_ / "rep_runjson" / "a");
    write(dir_ / "rep_runjson" / "a" / "run.json", "[\"m\", 1]");
    write(dir_ / "rep_runjson" / "a" / "summary.csv", "Tasks,niah\nScore,75.00\nNulls,0/4\n");
    fs::create_directories(dir_ / "rep_unfinished" / "a");
    write(dir_ / "rep_unfinished" / "a" / "run.json", R"({"model": "m", "press": "snapkv", "budget": 64})");
    fs::create_directories(dir_ / "rep_none" / "x");
    // llama2.c checkpoint: the shared one when present (else the import base case is skipped)
    if (auto assets = test::shared_assets(); assets && fs::exists(*assets / "stories260K.bin") &&
                                             fs::exists(*assets / "tok512.bin")) {
      llama2c_ = (*assets / "stories260K.bin").string();
      tok512_ = (*assets / "tok512.bin").string();
      const std::string bin = test::read_file(llama2c_);
      write(dir_ / "trunc.bin", bin.substr(0, bin.size() / 3));
      write(dir_ / "header.bin", bin.substr(0, 28));
      const std::string tok = test::read_file(tok512_);
      write(dir_ / "trunc_tok.bin", tok.substr(0, tok.size() / 2));
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  std::string out(const std::string& name) { return (dir_ / "out" / (name + std::to_string(++outputs_))).string(); }

  // The subcommands, each with a cheap valid base and its mutations.
  std::vector<Command> commands() {
    const std::string tiny = p("tiny.gguf");
    // Flags every model-running command shares.
    const std::vector<Mutation> model_flags = {
        {"-m", p("trunc.gguf"), Expect::Fail},        {"-m", p("trunc_header.gguf"), Expect::Fail},
        {"-m", p("trunc_meta.gguf"), Expect::Fail},   {"-m", p("garbage.gguf"), Expect::Fail},
        {"-m", p("empty.txt"), Expect::Fail},         {"-m", p("adir"), Expect::Fail},
        {"-m", "/dev/zero", Expect::Fail},            {"-m", p("missing.gguf"), Expect::Fail},
        {"-m", p("text.txt"), Expect::Fail},          {"-m", p("qwen.gguf"), Expect::Either},
        {"-t", "65536", Expect::Fail},                {"-t", "32768", Expect::Fail},
        {"-t", "-1", Expect::Fail},                   {"-t", "abc", Expect::Fail},
        {"-t", "99999999999999999999", Expect::Fail}, {"-t", "1", Expect::Either},
        {"-t", "3", Expect::Either},                  {"-ub", "0", Expect::Fail},
        {"-ub", "-5", Expect::Fail},                  {"-ub", "1000000000", Expect::Fail},
        {"-ub", "2147483647", Expect::Fail},          {"-ub", "65536", Expect::Fail},
        {"-ub", "1", Expect::Either},                 {"-ub", "7", Expect::Either},
        {"-c", "-1", Expect::Fail},                   {"-c", "x", Expect::Fail},
        {"-c", "1", Expect::Either},                  {"-c", "64", Expect::Either},
        {"-ctk", "q4_0", Expect::Fail},               {"-ctk", "f16", Expect::Either},
        {"--precision", "slow", Expect::Fail},        {"--precision", "fast", Expect::Either},
        {"", "--no-such-flag", Expect::Fail},         {"", "--no-mmap", Expect::Either},
    };
    auto join = [](std::vector<Mutation> a, const std::vector<Mutation>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    const std::vector<Mutation> text_file = {
        {"-f", "/dev/zero", Expect::Fail},   {"-f", p("adir"), Expect::Fail},      {"-f", p("missing.txt"), Expect::Fail},
        {"-f", "/dev/null", Expect::Either}, {"-f", p("empty.txt"), Expect::Either}, {"-f", p("utf8.txt"), Expect::Either},
        {"-f", p("nul.txt"), Expect::Either}, {"-f", p("tiny.gguf"), Expect::Either},
    };
    const std::vector<Mutation> window_flags = {
        {"--prompt-tokens", "0", Expect::Fail},          {"--prompt-tokens", "-3", Expect::Fail},
        {"--prompt-tokens", "2147483647", Expect::Fail}, {"--prompt-tokens", "5000", Expect::Fail},
        {"--prompt-tokens", "17", Expect::Either},       {"--continuation-tokens", "0", Expect::Either},
        {"--continuation-tokens", "-1", Expect::Fail},   {"--continuation-tokens", "2147483647", Expect::Fail},
        {"--windows", "0", Expect::Either},              {"--windows", "-1", Expect::Fail},
        {"--windows", "1000000000", Expect::Fail},       {"--windows", "2", Expect::Either},
        {"--budgets", "abc", Expect::Fail},              {"--budgets", "0", Expect::Fail},
        {"--budgets", "-8", Expect::Fail},               {"--budgets", "", Expect::Fail},
        {"--budgets", "8,,16", Expect::Either},          {"--budgets", "99999999999", Expect::Fail},
        {"--budgets", "1000000", Expect::Either},
        {"--press", "nosuchpress", Expect::Fail},        {"--press", "snapkv:window=-1", Expect::Fail},
        {"--press", "snapkv:nosuchparam=1", Expect::Fail},
        {"--press", "momentkv", Expect::Either}, {"--press", "full", Expect::Either},
        {"--press", "", Expect::Fail},
    };
    const std::vector<Mutation> eval_flags = {
        {"--shard", "2/2", Expect::Fail},       {"--shard", "1/0", Expect::Fail},      {"--shard", "-1/2", Expect::Fail},
        {"--shard", "a/b", Expect::Fail},       {"--shard", "1/2", Expect::Either},    {"--protocol", "fast", Expect::Fail},
        {"--protocol", "kvpress", Expect::Either}, {"--chat-template", "nosuch", Expect::Fail},
        {"--chat-template", "chatml", Expect::Either}, {"--max-samples", "0", Expect::Either},
        {"--max-samples", "-7", Expect::Either}, {"--budgets", "x", Expect::Fail},    {"--budgets", "0", Expect::Fail},
        {"--press", "nosuchpress", Expect::Fail}, {"--press", "snapkv", Expect::Either},
        {"-o", p("text.txt"), Expect::Fail},     {"-o", "/dev/null", Expect::Fail},
    };

    std::vector<Command> cmds;
    cmds.push_back({"generate",
                    {"generate", "-m", tiny, "-p", "Tom had a ball", "-n", "4", "--temp", "0"},
                    join(join(model_flags, text_file),
                         {{"-n", "-2", Expect::Either},        {"-n", "0", Expect::Either},
                          {"-n", "2147483647", Expect::Either}, {"-n", "x", Expect::Fail},
                          {"--temp", "-1", Expect::Either},    {"--temp", "nan", Expect::Either},
                          {"--temp", "1e39", Expect::Either},  {"--top-k", "-5", Expect::Either},
                          {"--top-p", "7", Expect::Either},    {"--min-p", "-3", Expect::Either},
                          {"-s", "-99", Expect::Either},       {"-s", "99999999999999999999", Expect::Either},
                          {"-p", "\xff\xfe\xc3(", Expect::Either}, {"-p", "", Expect::Either},
                          {"--press", "nosuchpress", Expect::Fail},
                          {"--press", "snapkv", Expect::Fail},  // a press without a budget
                          {"--kv-budget", "-1", Expect::Fail},
                          {"--kv-budget", "2147483647", Expect::Fail},
                          {"--compression-ratio", "1.5", Expect::Fail},
                          {"--compression-ratio", "-0.5", Expect::Fail},
                          {"--chat-template", "nosuch", Expect::Either},  // only read with -cnv
                          {"", "--conversation", Expect::Either}}),
                    });
    cmds.push_back({"tokenize",
                    {"tokenize", "-m", tiny, "-p", "Tom had a ball"},
                    join(text_file,
                         {{"-m", p("trunc.gguf"), Expect::Fail},      {"-m", p("trunc_meta.gguf"), Expect::Fail},
                          {"-m", p("garbage.gguf"), Expect::Fail},    {"-m", p("adir"), Expect::Fail},
                          {"-m", "/dev/zero", Expect::Fail},          {"-m", p("empty.txt"), Expect::Fail},
                          {"-p", "\xff\xfe\xc3(", Expect::Either},      {"-p", "<s></s><|im_start|>", Expect::Either},
                          {"", "--ids", Expect::Either},              {"", "--no-bos", Expect::Either},
                          {"", "--no-such-flag", Expect::Fail}}),
                    });
    cmds.push_back({"logits",
                    {"logits", "-m", tiny, "--tokens", "1,2,3", "-o", out("logits")},
                    join(model_flags,
                         {{"--tokens", "1,x", Expect::Fail},          {"--tokens", "-1", Expect::Fail},
                          {"--tokens", "99999999", Expect::Fail},     {"--tokens", "99999999999999999999", Expect::Fail},
                          {"--tokens", ",,,", Expect::Fail},          {"--tokens", "[1, 2]", Expect::Either},
                          {"-o", p("adir"), Expect::Fail},            {"-o", "/nonexistent/dir/x.bin", Expect::Fail}}),
                    });
    std::vector<Mutation> logits_files = {
        {"--tokens-file", "/dev/zero", Expect::Fail},      {"--tokens-file", p("adir"), Expect::Fail},
        {"--tokens-file", p("tokens_bad.txt"), Expect::Fail}, {"--tokens-file", p("tokens_big.txt"), Expect::Fail},
        {"--tokens-file", p("empty.txt"), Expect::Fail},   {"--tokens-file", p("tokens.txt"), Expect::Either},
        {"--tokens-file", p("utf8.txt"), Expect::Fail},
    };
    cmds.push_back({"logits-file", {"logits", "-m", tiny, "--tokens-file", p("tokens.txt"), "-o", out("logits")},
                    logits_files});
    const Args window_base = {"-f", p("text.txt"), "--press", "snapkv", "--budgets", "8", "--windows", "1",
                              "--prompt-tokens", "32", "--continuation-tokens", "8"};
    Args kl = {"kl", "-m", tiny};
    kl.insert(kl.end(), window_base.begin(), window_base.end());
    cmds.push_back({"kl", kl,
                    join(join(join(model_flags, text_file), window_flags),
                         {{"--nc", "maybe", Expect::Fail}, {"--nc", "off", Expect::Either}, {"", "--equal-bytes", Expect::Either},
                          {"-o", p("adir"), Expect::Fail}}),
                    });
    Args fid = {"fidelity", "-m", tiny};
    fid.insert(fid.end(), window_base.begin(), window_base.end());
    fid.insert(fid.end(), {"-o", out("fid")});
    cmds.push_back({"fidelity", fid,
                    join(join(join(model_flags, text_file), window_flags),
                         {{"-o", p("text.txt"), Expect::Fail}, {"", "--no-output-metrics", Expect::Either}}),
                    });
    cmds.push_back({"eval ruler (data)",
                    {"eval", "ruler", "-m", tiny, "--data", p("ruler.jsonl"), "-o", out("ruler")},
                    join(join(model_flags, eval_flags),
                         {{"--data", "/dev/zero", Expect::Fail},            {"--data", p("adir"), Expect::Fail},
                          {"--data", p("missing.jsonl"), Expect::Fail},     {"--data", p("empty.txt"), Expect::Fail},
                          {"--data", p("ruler_bad.jsonl"), Expect::Fail},   {"--data", p("ruler_dup.jsonl"), Expect::Fail},
                          {"--data", p("ruler_types.jsonl"), Expect::Fail}, {"--data", p("ruler_utf8.jsonl"), Expect::Fail},
                          {"--data", p("ruler_array.jsonl"), Expect::Fail}, {"--data", p("tiny.gguf"), Expect::Fail},
                          {"--data", p("text.txt"), Expect::Fail},          {"--length", "0", Expect::Fail},
                          {"--length", "-5", Expect::Fail},                 {"--samples", "0", Expect::Fail},
                          {"-c", "8", Expect::Fail}}),
                    });
    cmds.push_back({"eval ruler (generated)",
                    {"eval", "ruler", "-m", tiny, "--essay", p("text.txt"), "--length", "4096", "--samples", "1",
                     "--tasks", "niah_single_2", "-o", out("rulergen")},
                    join(join(model_flags, eval_flags),
                         {{"--length", "99999999", Expect::Fail},     {"--length", "9223372036854775807", Expect::Fail},
                          {"--length", "5000", Expect::Fail},         {"--length", "-1", Expect::Fail},
                          {"--length", "3", Expect::Fail},            {"--length", "x", Expect::Fail},
                          {"--samples", "999999999", Expect::Fail},   {"--samples", "-2", Expect::Fail},
                          {"--samples", "2", Expect::Either},         {"--essay", "/dev/zero", Expect::Fail},
                          {"--essay", p("adir"), Expect::Fail},       {"--essay", p("empty.txt"), Expect::Fail},
                          {"--essay", p("missing.txt"), Expect::Fail}, {"--essay", p("utf8.txt"), Expect::Either},
                          {"--tasks", "nosuchtask", Expect::Fail},    {"--tasks", ",", Expect::Fail},
                          {"--tasks", "niah_single_1,vt", Expect::Either}, {"--seed", "-1", Expect::Either},
                          {"-c", "128", Expect::Fail}}),
                    });
    cmds.push_back({"eval longbench",
                    {"eval", "longbench", "-m", tiny, "--data", p("lb"), "--dataset2prompt", p("d2p.json"),
                     "--dataset2maxlen", p("d2m.json"), "-o", out("lb")},
                    join(join(model_flags, eval_flags),
                         {{"--data", "/dev/zero", Expect::Fail},                 {"--data", p("lb_bad"), Expect::Fail},
                          {"--data", p("lb/qasper.jsonl"), Expect::Either},      {"--data", p("missing"), Expect::Fail},
                          {"--data", p("adir"), Expect::Fail},                   {"--data", p("ruler_bad.jsonl"), Expect::Fail},
                          {"--dataset2prompt", "/dev/zero", Expect::Fail},       {"--dataset2prompt", p("adir"), Expect::Fail},
                          {"--dataset2prompt", p("d2p_bad.json"), Expect::Fail}, {"--dataset2prompt", p("d2p_field.json"), Expect::Fail},
                          {"--dataset2prompt", p("empty.txt"), Expect::Fail},    {"--dataset2prompt", p("utf8.txt"), Expect::Fail},
                          {"--dataset2maxlen", p("d2m_neg.json"), Expect::Fail}, {"--dataset2maxlen", p("d2m_huge.json"), Expect::Fail},
                          {"--dataset2maxlen", p("d2p.json"), Expect::Fail},     {"--datasets", "nosuch", Expect::Fail},
                          {"--max-length", "-1", Expect::Fail},                  {"--max-length", "99999999", Expect::Fail},
                          {"--max-length", "16", Expect::Either}}),
                    });
    cmds.push_back({"report",
                    {"report", p("rep_ok")},
                    {{"", p("rep_bad"), Expect::Fail},        {"", p("rep_csv"), Expect::Fail},
                     {"", p("rep_runjson"), Expect::Fail},    {"", p("rep_none"), Expect::Fail},
                     {"", p("missing"), Expect::Fail},        {"", p("text.txt"), Expect::Fail},
                     {"", "/dev/zero", Expect::Fail},         {"", p("rep_unfinished"), Expect::Either},
                     {"-o", p("text.txt"), Expect::Fail},     {"-o", out("report"), Expect::Either},
                     {"", "--no-such-flag", Expect::Fail}},
                    });
    cmds.push_back({"bench",
                    {"bench", "-m", tiny, "-p", "8", "-n", "4", "-r", "1", "--no-probe"},
                    {{"-m", p("trunc.gguf"), Expect::Fail},     {"-m", p("adir"), Expect::Fail},
                     {"-m", "/dev/zero", Expect::Fail},         {"-m", p("garbage.gguf"), Expect::Fail},
                     {"-t", "65536", Expect::Fail},             {"-t", "1,65536", Expect::Fail},
                     {"-t", "0", Expect::Fail},                 {"-t", "x", Expect::Fail},
                     {"-p", "-1", Expect::Fail},                {"-p", "a,b", Expect::Fail},
                     {"-p", "0", Expect::Either},               {"-n", "-1", Expect::Fail},
                     {"-r", "0", Expect::Fail},                 {"-r", "-3", Expect::Fail},
                     {"-o", "xml", Expect::Fail},               {"-o", "json", Expect::Either},
                     {"-ub", "0", Expect::Fail},                {"-ub", "1000000000", Expect::Fail},
                     {"-ctk", "q4_0", Expect::Fail},            {"--precision", "slow", Expect::Fail},
                     {"-p", "99999999", Expect::Fail}, {"-d", "99999999", Expect::Fail},
                     {"-p", "5000", Expect::Fail}, {"-d", "5000", Expect::Fail},
                     {"-n", "99999999", Expect::Fail},
                     {"--press", "nosuchpress", Expect::Fail},  {"--kv-budget", "-1", Expect::Fail},
                     {"--press", "snapkv", Expect::Fail}},  // no --kv-budget
                    });
    cmds.push_back({"make-model",
                    {"make-model", "--shape", "tiny-llama", "-o", out("made") + ".gguf"},
                    {{"--shape", "nosuch", Expect::Fail},         {"--type", "Q9_9", Expect::Fail},
                     {"--type", "Q4_K", Expect::Either}, {"--type", "Q4_K_M", Expect::Either},
                     {"--type", "Q8_0_M", Expect::Fail},  {"--type", "_M", Expect::Fail},
                     {"--seed", "-1", Expect::Either},
                     {"-o", p("adir"), Expect::Fail},
                     {"-o", "/nonexistent/dir/x.gguf", Expect::Fail},
                     {"-o", "", Expect::Fail},                    {"--shape", "tiny-qwen2", Expect::Either}},
                    });
    if (!llama2c_.empty()) {
      cmds.push_back({"import-llama2c",
                      {"import-llama2c", "--model", llama2c_, "--tokenizer", tok512_, "-o", out("imported") + ".gguf"},
                      {{"--model", p("trunc.bin"), Expect::Fail},        {"--model", p("header.bin"), Expect::Fail},
                       {"--model", p("garbage.bin"), Expect::Fail},      {"--model", p("empty.txt"), Expect::Fail},
                       {"--model", p("missing.bin"), Expect::Fail},      {"--model", p("adir"), Expect::Fail},
                       {"--model", "/dev/zero", Expect::Fail},
                       {"--tokenizer", p("trunc_tok.bin"), Expect::Fail}, {"--tokenizer", p("garbage.bin"), Expect::Fail},
                       {"--tokenizer", p("adir"), Expect::Fail},
                       {"--tokenizer", p("trunc.gguf"), Expect::Fail},   {"--tokenizer", p("tiny.gguf"), Expect::Either},
                       {"--type", "Q4_0", Expect::Fail},                 {"--type", "F16", Expect::Either},
                       {"--context", "-1", Expect::Fail},                {"--context", "2147483647", Expect::Either},
                       {"-o", p("adir"), Expect::Fail}},
                      });
    }
    // Sweep files are the positional argument: generate_cases gives each bad file its own case.
    cmds.push_back({"sweep submit",
                    {"sweep", "submit", p("sw_ok.json"), "--dry-run"},
                    {{"--only", "nope", Expect::Fail},    {"--array", "9-1", Expect::Fail},
                     {"--array", "x", Expect::Fail},      {"--array", "0,99", Expect::Fail},
                     {"--only", "failed", Expect::Either}, {"--array", "1", Expect::Either},
                     {"", "--no-such-flag", Expect::Fail}, {"", p("sw_ok.json"), Expect::Fail}}});
    cmds.push_back({"sweep status",
                    {"sweep", "status", p("sw_ok.json"), "--json"},
                    {{"", "--no-such-flag", Expect::Fail}, {"", p("sw_ok.json"), Expect::Fail}}});
    cmds.push_back({"presses", {"presses"}, {{"", "extra", Expect::Fail}, {"", "--no-such-flag", Expect::Fail}}});
    return cmds;
  }

  // The deterministic cases (each base, each mutation alone), then kRandomCases seeded
  // combinations of one to three mutations of one command.
  std::vector<Case> generate_cases() {
    std::vector<Case> cases;
    cases.push_back({{"nosuchcommand"}, Expect::Fail});
    cases.push_back({{}, Expect::Fail});
    cases.push_back({{"eval"}, Expect::Fail});
    cases.push_back({{"report", p("rep_unfinished")}, Expect::Fail});  // a warning, then the error
    for (const char* file : {"sw_types.json", "sw_unknown.json", "sw_press.json", "sw_budget.json", "sw_shards.json",
                             "sw_model.json", "sw_trunc.json", "missing.json", "empty.txt", "adir", "utf8.txt"})
      for (const char* verb : {"submit", "status", "run"}) cases.push_back({{"sweep", verb, p(file)}, Expect::Fail});
    cases.push_back({{"sweep", "submit", "/dev/zero", "--dry-run"}, Expect::Fail});
    cases.push_back({{"sweep", "run", p("sw_ok.json"), "--local", "0"}, Expect::Fail});
    cases.push_back({{"sweep", "run", p("sw_ok.json"), "--local", "-2"}, Expect::Fail});
    cases.push_back({{"sweep"}, Expect::Fail});
    const std::vector<Command> cmds = commands();
    for (const Command& c : cmds) {
      cases.push_back({c.base, Expect::Pass});
      for (const Mutation& m : c.mutations) cases.push_back({with_flag(c.base, m.flag, m.value), m.expect});
    }
    std::mt19937 rng(kSeed);  // rng() % n, not std::uniform_int_distribution: identical on every library
    for (int i = 0; i < kRandomCases; ++i) {
      const Command& c = cmds[rng() % cmds.size()];
      if (c.mutations.empty()) continue;
      Case k{c.base, Expect::Either};
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < n; ++j) {
        const Mutation& m = c.mutations[rng() % c.mutations.size()];
        k.args = with_flag(k.args, m.flag, m.value);
      }
      // Invalid by construction when some flag ends up holding one of its invalid values (a later
      // mutation of the same flag may have replaced an earlier invalid value).
      for (const Mutation& m : c.mutations)
        if (m.expect == Expect::Fail) {
          if (m.flag.empty()) {
            for (const auto& a : k.args)
              if (a == m.value && std::find(c.base.begin(), c.base.end(), a) == c.base.end()) k.expect = Expect::Fail;
            continue;
          }
          for (std::size_t a = 0; a + 1 < k.args.size(); ++a)
            if (k.args[a] == m.flag && k.args[a + 1] == m.value) k.expect = Expect::Fail;
        }
      // Outputs of a random case go to a folder of their own (no resume across cases).
      for (std::size_t a = 0; a + 1 < k.args.size(); ++a)
        if (k.args[a] == "-o" && k.args[a + 1].rfind((dir_ / "out").string(), 0) == 0) k.args[a + 1] += "_r" + std::to_string(i);
      cases.push_back(std::move(k));
    }
    return cases;
  }

  fs::path dir_;
  std::string llama2c_, tok512_;
  int outputs_ = 0;
};

TEST_F(CliFuzz, EveryCommandFailsCleanlyOnBadInput) {
  const std::vector<Case> cases = generate_cases();
  const auto start = std::chrono::steady_clock::now();
  test::TimedOptions options;
  options.timeout_seconds = kCaseTimeoutSeconds;
  options.cwd = dir_.string();
  int failures = 0;
  for (const Case& c : cases) {
    const test::TimedResult r = test::run_momentkv_timed(c.args, options);
    std::string problem;
    if (r.timed_out) problem = "timed out after " + std::to_string(int(kCaseTimeoutSeconds)) + " s (hang)";
    else if (r.signal != 0) problem = test::error_convention_problem(r);
    else if (c.expect == Expect::Pass && r.exit_code != 0) problem = "a valid base command failed";
    else if (c.expect == Expect::Fail && r.exit_code == 0) problem = "exit 0 on an input that is invalid by construction";
    else if (r.exit_code != 0) problem = test::error_convention_problem(r);
    if (problem.empty()) continue;
    ++failures;
    ADD_FAILURE() << problem << "\n  command: " << test::command_line(c.args) << "\n  exit " << r.exit_code << ", stderr: "
                  << r.err.substr(0, 600);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[fuzz] %zu cases (seed %u) in %.1f s; %d failed\n", cases.size(), kSeed, seconds, failures);
}

}  // namespace
}  // namespace mkv
