// The Slurm array script: its #SBATCH lines, one case per task, the memory estimate, and that it
// runs a task by hand (no Slurm) idempotently.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "sweep/array_script.h"
#include "sweep/memory_estimate.h"
#include "sweep/sweep_test_support.h"
#include "sweep/task_record.h"

namespace mkv::sweep {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// bash -n: the script parses.
bool bash_accepts(const std::string& script, const fs::path& file) {
  test::write_text(file, script);
  const test::ShellRun r = test::run_shell("bash -n " + shell_quote(file.string()));
  EXPECT_EQ(r.err, "");
  return r.exit_code == 0;
}

SweepSpec needle_spec(const fs::path& dir, int samples, json slurm = json::object()) {
  const fs::path data = test::needle_samples(dir / "samples.jsonl", samples);
  json j = test::needle_sweep(data, dir / "out", {64, 128}, 2);
  j["slurm"] = std::move(slurm);
  return parse_sweep(j.dump(), dir / "sweep.json");
}

TEST(ArrayScript, OneArrayTaskPerConfigAndShardWithTheSlurmSettings) {
  const fs::path dir = test::temp_dir();
  const SweepSpec spec = needle_spec(dir, 4,
                                     {{"partition", "debug"}, {"time", "00:10:00"}, {"mem", "2G"}, {"cpus_per_task", 2},
                                      {"max_running", 3}, {"account", "lab"}, {"extra", {"--gres=gpu:1"}}});
  const std::vector<SweepTask> tasks = plan_tasks(spec);
  ASSERT_EQ(tasks.size(), 8u);
  const std::string script = array_script(spec, tasks, "/opt/momentkv/bin/momentkv");
  EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
  const std::vector<std::string> lines = {
      "#SBATCH --job-name=needle\n", "#SBATCH --array=0-7%3\n",
      "#SBATCH --output=" + (dir / "out/logs").string() + "/%x_%A_%a.out\n", "#SBATCH --open-mode=append\n",
      "#SBATCH --requeue\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --mem=2048M\n", "#SBATCH --partition=debug\n",
      "#SBATCH --time=00:10:00\n", "#SBATCH --account=lab\n", "#SBATCH --gres=gpu:1\n",
      "momentkv=/opt/momentkv/bin/momentkv\n"};
  for (const std::string& line : lines)
    EXPECT_TRUE(contains(script, line)) << line;
  // All #SBATCH lines come before the first command (sbatch stops reading them there).
  EXPECT_LT(script.rfind("#SBATCH"), script.find("set -uo pipefail"));
  for (const SweepTask& t : tasks) {
    EXPECT_TRUE(contains(script, fmt::format("  {}) dir={}\n", t.index, t.dir.string()))) << t.index;
    EXPECT_TRUE(contains(script, fmt::format("--budgets {} --shard {}/2 ", t.setting.budget, t.shard))) << t.index;
  }
  EXPECT_TRUE(bash_accepts(script, dir / "check.sbatch"));
  EXPECT_EQ(array_option(spec, {1, 2, 3, 6}), "1-3,6%3");
  EXPECT_EQ(sbatch_command(spec, {5}),
            (std::vector<std::string>{"sbatch", "--parsable", "--array=5%3", (dir / "out/slurm/needle.sbatch").string()}));
}

TEST(ArrayScript, WordsAreQuotedForBash) {
  EXPECT_EQ(shell_quote("/a/b-c_d.gguf"), "/a/b-c_d.gguf");
  EXPECT_EQ(shell_quote("snapkv:kernel=15"), "snapkv:kernel=15");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  const fs::path dir = test::temp_dir() / "with space's";
  fs::create_directories(dir);
  const SweepSpec spec = needle_spec(dir, 4, {{"logs", (dir.parent_path() / "logs").string()}});
  const std::string script = array_script(spec, plan_tasks(spec), "/bin/true");
  EXPECT_TRUE(contains(script, "dir='" + dir.string().replace(dir.string().find('\''), 1, "'\\''"))) << script;
  EXPECT_TRUE(bash_accepts(script, dir / "check.sbatch"));
}

TEST(ArrayScript, MemoryEstimateCountsWeightsFullPromptCacheActivationsAndOverhead) {
  const fs::path dir = test::temp_dir();
  SweepSpec spec = needle_spec(dir, 4);
  // The needle model: 4 layers, 2 KV heads, head_dim 32; data files → prompts up to the 2048 context.
  const MemoryEstimate e = estimate_task_memory(spec);
  EXPECT_EQ(e.prompt_tokens, 2048);
  EXPECT_EQ(e.weights, fs::file_size(test::needle_model()));
  EXPECT_EQ(e.kv_cache, 2048ull * 4 * 2 * (32 + 32) * 4);
  EXPECT_EQ(e.overhead, 512ull << 20);
  const double sum_mib = double(e.weights + e.kv_cache + e.activations + e.overhead) / (1 << 20);
  EXPECT_GE(e.total_mib, sum_mib * 1.25);
  EXPECT_LT(e.total_mib, sum_mib * 1.25 + 256);
  EXPECT_EQ(e.total_mib % 256, 0);
  // A 7B-like model at a 32K prompt: the KV cache dominates (32 layers × 8 KV heads × 256 × 4 B per token).
  ModelFacts big = spec.models[0];
  big.file_bytes = 4ull << 30;
  big.n_layers = 32, big.n_heads = 32, big.n_kv_heads = 8, big.head_dim_k = big.head_dim_v = 128;
  big.n_embd = 4096, big.n_ff = 14336, big.n_vocab = 128256, big.context_length = 131072;
  spec.models = {big};
  spec.ruler.data.clear();
  spec.ruler.length = 32768;
  const MemoryEstimate b = estimate_task_memory(spec);
  EXPECT_EQ(b.kv_cache, 32768ull * 32 * 8 * 256 * 4);  // 8 GiB
  EXPECT_GT(b.total_mib, (4 + 8) * 1024);
  spec.cache_type = "f16";
  EXPECT_EQ(estimate_task_memory(spec).kv_cache, b.kv_cache / 2);
  spec.compress_chunks = true;  // only the largest budget plus one chunk is cached
  EXPECT_EQ(estimate_task_memory(spec).kv_cache, (128ull + 512) * 32 * 8 * 256 * 2);
  spec.slurm.mem_mib = 3000;
  EXPECT_EQ(task_memory_mib(spec), 3000);
}

TEST(ArrayScript, RunsATaskByHandAndAgainIsANoOp) {
  const fs::path dir = test::temp_dir();
  const SweepSpec spec = needle_spec(dir, 2);
  const std::vector<SweepTask> tasks = plan_tasks(spec);
  const fs::path script = dir / "needle.sbatch";
  test::write_text(script, array_script(spec, tasks, MOMENTKV_BIN));
  const auto run = [&](const std::string& env) { return test::run_shell(env + " bash " + script.string()); };

  test::ShellRun r = run("SLURM_ARRAY_TASK_ID=3");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const SweepTask& t = tasks[3];
  const std::optional<TaskRecord> record = read_task_record(t.dir);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->state, "done");
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_EQ(record->job, "");  // not run by Slurm
  EXPECT_TRUE(fs::exists(t.score_file));
  EXPECT_EQ(probe_task_lock(t.dir), LockState::free);
  const std::string predictions = test::read_file(t.run_dir / "pred" / "samples.jsonl");
  EXPECT_EQ(std::count(predictions.begin(), predictions.end(), '\n'), 1);  // shard 1/2 of 2 samples

  r = run("SLURM_ARRAY_TASK_ID=3");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "task 3: already done")) << r.out;
  EXPECT_EQ(test::read_file(t.run_dir / "pred" / "samples.jsonl"), predictions);

  r = run("SLURM_ARRAY_TASK_ID=8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "no task 8 (tasks 0-7)")) << r.err;
  r = run("unset SLURM_ARRAY_TASK_ID;");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "set SLURM_ARRAY_TASK_ID to a task index (0-7)")) << r.err;
}

}  // namespace
}  // namespace mkv::sweep
