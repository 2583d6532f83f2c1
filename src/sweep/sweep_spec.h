// A sweep file: the whole grid of one evaluation campaign (models × presses × budgets, split into
// shards) and how to run it on Slurm, as one validated value. `momentkv sweep submit | status |
// run` all read it, so the laptop (`run --local N`) and the cluster (`submit`) use one format.
//
// The file is JSON (docs/SWEEPS.md has the full reference):
//   {"name": "needle", "models": ["stories.gguf"],
//    "benchmark": {"name": "ruler", "tasks": ["niah_single_1"], "length": 4096, "samples": 25},
//    "presses": ["snapkv", "streaming_llm"], "budgets": [64, 128], "shards": 2, "threads": 1,
//    "output": "results/needle",
//    "slurm": {"partition": "cpu", "time": "02:00:00", "cpus_per_task": 1, "logs": "logs"}}
// Relative paths are relative to the sweep file's folder and are made absolute here, so the
// generated script runs from any working directory. Every error names the file and the field
// ("sweep.json: benchmark.length: ..."); unknown keys are errors (a typo must not be ignored).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kv/press_config.h"

namespace mkv::sweep {

// What the sweep needs to know about one model file (read from its GGUF header at validation).
struct ModelFacts {
  std::filesystem::path path;  // absolute
  std::string stem;            // file name without .gguf: the model's folder and report name
  uint64_t file_bytes = 0;
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim_k = 0, head_dim_v = 0;
  int n_embd = 0, n_ff = 0, n_vocab = 0;
  int context_length = 0;
};

struct RulerOptions {
  std::vector<std::string> tasks = {"niah_single_1"};  // generated tasks (unused with data)
  int64_t length = 4096;
  int64_t samples = 25;
  uint64_t seed = 42;
  std::filesystem::path essay;                   // absolute; the default essay when not given
  std::vector<std::filesystem::path> data;       // existing RULER jsonl files instead of generating
  int64_t fewest_samples = 0;                    // data: the smallest file's sample count
};

struct LongBenchOptions {
  std::filesystem::path data;             // folder of {dataset}.jsonl or one .jsonl
  std::filesystem::path dataset2prompt;   // LongBench config/dataset2prompt.json
  std::filesystem::path dataset2maxlen;   // LongBench config/dataset2maxlen.json
  std::vector<std::string> datasets;      // empty = every file in data
  int64_t max_length = 0;                 // 0 = context − generation length
};

struct SlurmOptions {
  std::string partition;                // empty = the cluster's default partition
  std::string time;                     // --time; empty = the partition's default
  std::optional<int64_t> mem_mib;       // --mem in MiB; nullopt = estimated (memory_estimate.h)
  int cpus_per_task = 0;                // 0 = threads
  std::filesystem::path logs;           // absolute; default OUTPUT/logs
  int max_running = 0;                  // the array's %N cap; 0 = none
  std::string account, qos;             // empty = not set
  std::vector<std::string> extra;       // further sbatch options, each "--name=value"
};

struct SweepSpec {
  std::filesystem::path file;           // the sweep file, absolute
  std::string name;                     // job name and file prefix; default the file's stem
  std::vector<ModelFacts> models;
  std::string benchmark = "ruler";      // ruler | longbench
  RulerOptions ruler;
  LongBenchOptions longbench;
  std::vector<PressConfig> presses;     // without budgets
  std::vector<int32_t> budgets;         // tokens per KV head (unused by "full")
  int shards = 1;
  int threads = 1;                      // eval -t per task
  std::string protocol = "snapkv";      // snapkv | kvpress
  std::string chat_template = "auto";   // auto | none | llama3 | chatml | qwen3
  std::string cache_type = "f32";       // f32 | f16
  int ctx_size = 0;                     // eval -c; 0 = the model's
  int ubatch_size = 512;                // eval -ub
  bool compress_chunks = false;         // eval --compress-chunks
  std::filesystem::path output;         // absolute output root
  SlurmOptions slurm;
};

// Defaults that come from the installation rather than the file.
struct SweepDefaults {
  std::filesystem::path essay;  // RULER's essay haystack when the file names none (empty: none found)
};

// Reads, parses and validates a sweep file (models opened, presses parsed, paths checked).
// MkvError "FILE: FIELD: problem" for anything wrong.
SweepSpec load_sweep_file(const std::filesystem::path& file, const SweepDefaults& defaults = {});
// The same from JSON text; `file` names it in messages and anchors relative paths.
SweepSpec parse_sweep(const std::string& text, const std::filesystem::path& file, const SweepDefaults& defaults = {});

}  // namespace mkv::sweep
