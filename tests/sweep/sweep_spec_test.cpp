// Sweep files: what a valid file becomes, and that every mistake is an error naming the file and
// the field (never a crash, never ignored).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "support/test_support.h"
#include "sweep/sweep_spec.h"
#include "sweep/sweep_test_support.h"

namespace mkv::sweep {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

json valid_sweep(const fs::path& dir) {
  test::needle_samples(dir / "samples.jsonl", 4);
  return {{"name", "needle"},
          {"models", {test::needle_model().string()}},
          {"benchmark", {{"name", "ruler"}, {"data", "samples.jsonl"}}},
          {"presses", {"snapkv", "streaming_llm:sinks=8", "full"}},
          {"budgets", {64, 128}},
          {"shards", 2},
          {"threads", 2},
          {"output", "results/needle"},
          {"slurm", {{"partition", "debug"}, {"time", "1-00:00:00"}, {"mem", "2G"}, {"max_running", 4}}}};
}

TEST(SweepSpec, ParsesAValidFileAndResolvesPathsAgainstItsFolder) {
  const fs::path dir = test::temp_dir();
  const SweepSpec s = parse_sweep(valid_sweep(dir).dump(), dir / "sweep.json");
  EXPECT_EQ(s.name, "needle");
  EXPECT_EQ(s.file, dir / "sweep.json");
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].stem, "stories-needle-2k");
  EXPECT_EQ(s.models[0].n_layers, 4);
  EXPECT_EQ(s.models[0].n_kv_heads, 2);
  EXPECT_EQ(s.models[0].context_length, 2048);
  EXPECT_EQ(s.models[0].file_bytes, fs::file_size(test::needle_model()));
  EXPECT_EQ(s.benchmark, "ruler");
  ASSERT_EQ(s.ruler.data.size(), 1u);
  EXPECT_EQ(s.ruler.data[0], dir / "samples.jsonl");
  ASSERT_EQ(s.presses.size(), 3u);
  EXPECT_EQ(s.presses[1].as_given(), "streaming_llm:sinks=8");
  EXPECT_EQ(s.budgets, (std::vector<int32_t>{64, 128}));
  EXPECT_EQ(s.shards, 2);
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.output, dir / "results" / "needle");
  EXPECT_EQ(s.slurm.partition, "debug");
  EXPECT_EQ(s.slurm.time, "1-00:00:00");
  EXPECT_EQ(s.slurm.mem_mib, 2048);
  EXPECT_EQ(s.slurm.cpus_per_task, 2);  // default: threads
  EXPECT_EQ(s.slurm.logs, dir / "results" / "needle" / "logs");
  EXPECT_EQ(s.slurm.max_running, 4);
}

TEST(SweepSpec, GeneratedRulerTakesItsOptionsAndTheDefaultEssay) {
  const fs::path dir = test::temp_dir();
  test::write_text(dir / "essay.txt", "It was a dark and stormy night.\n");
  json j = valid_sweep(dir);
  j["benchmark"] = {{"name", "ruler"}, {"tasks", {"niah_single_1", "niah_single_2"}}, {"length", 1024},
                    {"samples", 8}, {"seed", 7}};
  const SweepSpec s = parse_sweep(j.dump(), dir / "sweep.json", SweepDefaults{dir / "essay.txt"});
  EXPECT_EQ(s.ruler.tasks, (std::vector<std::string>{"niah_single_1", "niah_single_2"}));
  EXPECT_EQ(s.ruler.length, 1024);
  EXPECT_EQ(s.ruler.samples, 8);
  EXPECT_EQ(s.ruler.seed, 7u);
  EXPECT_EQ(s.ruler.essay, dir / "essay.txt");
  EXPECT_TRUE(s.ruler.data.empty());
}

TEST(SweepSpec, MemoryIsMiBASizeOrAuto) {
  const fs::path dir = test::temp_dir();
  json j = valid_sweep(dir);
  const std::vector<std::pair<json, std::optional<int64_t>>> cases = {
      {4000, 4000}, {"500M", 500}, {"16G", 16384}, {"1T", 1048576}, {"2048K", 2}, {"auto", std::nullopt}};
  for (const auto& [mem, mib] : cases) {
    j["slurm"]["mem"] = mem;
    EXPECT_EQ(parse_sweep(j.dump(), dir / "sweep.json").slurm.mem_mib, mib) << mem.dump();
  }
}

// Each case: a change to the valid file and a fragment the error must contain after "FILE: ".
TEST(SweepSpec, MistakesAreErrorsNamingTheFileAndTheField) {
  const fs::path dir = test::temp_dir();
  test::write_text(dir / "not_a_model.gguf", "just text\n");
  const fs::path file = dir / "sweep.json";
  const json base = valid_sweep(dir);
  struct Case {
    std::function<void(json&)> change;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["budget"] = 64; }, "budget: unknown field"},
      {[](json& j) { j["slurm"]["partiton"] = "x"; }, "slurm.partiton: unknown field"},
      {[](json& j) { j["benchmark"]["lenght"] = 5; }, "benchmark.lenght: unknown field"},
      {[](json& j) { j["presses"] = {"snapkv", "nosuchpress"}; }, "presses[1]: "},
      {[](json& j) { j["presses"] = {"snapkv:window=-1"}; }, "presses[0]: "},
      {[](json& j) { j["presses"] = {"snapkv:budget=64"}; }, "presses[0]: press 'snapkv' carries a budget"},
      {[](json& j) { j["presses"] = {"snapkv", "snapkv"}; }, "presses[1]: 'snapkv' is listed twice"},
      {[](json& j) { j["presses"] = json::array(); }, "presses: give at least one press"},
      {[](json& j) { j.erase("presses"); }, "presses: required"},
      {[](json& j) { j["models"] = {"/nonexistent/model.gguf"}; }, "models[0]: '/nonexistent/model.gguf' does not exist"},
      {[&](json& j) { j["models"] = {(dir / "not_a_model.gguf").string()}; }, "models[0]: "},
      {[](json& j) { j.erase("models"); }, "models: required"},
      {[](json& j) { j["shards"] = 0; }, "shards: must be between 1 and"},
      {[](json& j) { j["shards"] = "2"; }, "shards: must be an integer"},
      {[](json& j) { j["shards"] = 2.5; }, "shards: must be an integer"},
      {[](json& j) { j.erase("budgets"); }, "budgets: required"},
      {[](json& j) { j["budgets"] = {64, 64}; }, "budgets[1]: budget 64 is listed twice"},
      {[](json& j) { j["budgets"] = {64, 0}; }, "budgets[1]: must be between 1 and"},
      {[](json& j) { j["threads"] = 0; }, "threads: must be between 1 and"},
      {[](json& j) { j["protocol"] = "fast"; }, "protocol: 'fast' is not one of"},
      {[](json& j) { j.erase("benchmark"); }, "benchmark: required"},
      {[](json& j) { j["benchmark"] = "ruler"; }, "benchmark: must be a JSON object"},
      {[](json& j) { j["benchmark"]["name"] = "ruller"; }, "benchmark.name: 'ruller' is not one of"},
      {[](json& j) { j["benchmark"]["data"] = "missing.jsonl"; }, "benchmark.data[0]: "},
      {[](json& j) { j["benchmark"]["length"] = 1024; }, "benchmark.length: not used with benchmark.data"},
      {[](json& j) { j["benchmark"] = {{"name", "ruler"}, {"tasks", {"nosuchtask"}}, {"essay", "samples.jsonl"}}; },
       "benchmark.tasks[0]: "},
      {[](json& j) { j["benchmark"] = {{"name", "ruler"}, {"length", 4096}, {"essay", "samples.jsonl"}}; },
       "benchmark.length: 4096 tokens is above the context of models[0]"},
      {[](json& j) { j["benchmark"] = {{"name", "ruler"}, {"length", 1024}, {"samples", 4}, {"essay", "samples.jsonl"}};
                     j["shards"] = 8; },
       "shards: 8 shards for 4 samples per task"},
      {[](json& j) { j["benchmark"] = {{"name", "ruler"}, {"length", 1024}}; }, "benchmark.essay: not given"},
      {[](json& j) { j["benchmark"] = {{"name", "longbench"}, {"data", "samples.jsonl"}}; },
       "benchmark.dataset2prompt: required for LongBench"},
      {[](json& j) { j.erase("output"); }, "output: required"},
      {[](json& j) { j["output"] = "results/100%"; }, "results/100%' contains a character that sweep paths cannot hold"},
      {[](json& j) { j["name"] = "my sweep"; }, "name: 'my sweep' is not a sweep name"},
      {[](json& j) { j["output"] = "my results"; }, "output: the log folder"},
      {[](json& j) { j["slurm"]["logs"] = "my logs"; }, "slurm.logs: the log folder"},
      {[](json& j) { j["shards"] = 5; }, "shards: 5 shards for a data file of 4 samples"},
      {[](json& j) { j["slurm"]["time"] = "2 hours"; }, "slurm.time: '2 hours' is not a Slurm time"},
      {[](json& j) { j["slurm"]["mem"] = "lots"; }, "slurm.mem: 'lots' is not a memory size"},
      {[](json& j) { j["slurm"]["mem"] = 0; }, "slurm.mem: must be at least 1"},
      {[](json& j) { j["slurm"]["cpus_per_task"] = 1; }, "slurm.cpus_per_task: 1 CPUs per task is below threads (2)"},
      {[](json& j) { j["slurm"]["extra"] = {"--array=0-3"}; }, "slurm.extra[0]: --array is set by momentkv sweep"},
      {[](json& j) { j["slurm"]["extra"] = {"gres=gpu:1"}; }, "slurm.extra[0]: 'gres=gpu:1' is not an sbatch option"},
      {[](json& j) { j["slurm"]["extra"] = {"--comment=a b"}; }, "slurm.extra[0]: '--comment=a b' holds a space"},
      {[](json& j) { j["slurm"]["partition"] = "a;b"; }, "slurm.partition: 'a;b' is not a partition name"},
      {[](json& j) { j = json::array(); }, "the top level must be a JSON object"},
  };
  for (const Case& c : cases) {
    json j = base;
    c.change(j);
    const std::string error = test::error_of([&] { parse_sweep(j.dump(), file); });
    EXPECT_EQ(error.rfind(file.string() + ": ", 0), 0u) << error;
    EXPECT_NE(error.find(c.fragment), std::string::npos) << "expected '" << c.fragment << "' in: " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(SweepSpec, MalformedJsonAndMissingFilesAreNamed) {
  const fs::path dir = test::temp_dir();
  const std::string bad = test::error_of([&] { parse_sweep("{\"name\": ", dir / "sweep.json"); });
  EXPECT_NE(bad.find((dir / "sweep.json").string() + ": not valid JSON"), std::string::npos) << bad;
  const std::string missing = test::error_of([&] { load_sweep_file(dir / "nope.json"); });
  EXPECT_NE(missing.find((dir / "nope.json").string()), std::string::npos) << missing;
}

}  // namespace
}  // namespace mkv::sweep
