// The tasks of a sweep: one per (configuration, shard), a configuration being a model and a press
// setting (press × budget; "full" once). Task i of the Slurm array is tasks[i]:
//   index = (model · settings + setting) · shards + shard
// so the shards of one configuration are neighbours and the mapping only depends on the order of
// models, presses and budgets in the sweep file.
//
// Every task has a folder of its own, named by content (not by index), so editing the sweep file
// never makes a task write into another one's results:
//   OUTPUT/{model}/{setting label}/shard{i}of{n}/          task folder: eval -o, task.json, task.lock
//   OUTPUT/{model}/{label}/shard{i}of{n}/{label}[_shard{i}of{n}]/   eval's run folder (run.json, pred/, scores)
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/runner/generation.h"
#include "sweep/sweep_spec.h"

namespace mkv::sweep {

struct SweepTask {
  int index = 0;
  std::size_t model = 0;               // into SweepSpec::models
  eval::PressSetting setting;
  int shard = 0, shards = 1;
  std::filesystem::path dir;           // the task folder (eval -o)
  std::filesystem::path run_dir;       // eval's run folder inside it
  std::filesystem::path score_file;    // written by eval when the run is complete
};

std::vector<SweepTask> plan_tasks(const SweepSpec& spec);

// The arguments after the binary that run one task: `eval ruler|longbench ... --shard i/n -o DIR`.
std::vector<std::string> eval_arguments(const SweepSpec& spec, const SweepTask& task);

// "0-3,5,7-8" for sorted indices (Slurm's --array syntax); MkvError for an empty list.
std::string index_ranges(const std::vector<int>& indices);
// Parses "0-3,5" (what --array takes, without %N or :step); every index must be below `count`.
// MkvError naming `what` and the bad item.
std::vector<int> parse_index_ranges(const std::string& text, int count, const std::string& what);

}  // namespace mkv::sweep
