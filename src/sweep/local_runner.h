// `momentkv sweep run FILE --local N`: the sweep's tasks without Slurm, as up to N child processes
// of the momentkv binary at once, each the same `eval ... --shard i/n -o DIR` an array task runs,
// with the same task records and locks (task_record.h), so `sweep status` and `report` read a
// local sweep exactly like a cluster one, and the two can even share an output folder.
// Tasks already done are skipped; tasks another run holds are left to it; a failed or killed task
// resumes when run again. Output of task i goes to LOGS/{name}_local_{i}.out (appended).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

#include "sweep/sweep_plan.h"
#include "sweep/sweep_spec.h"

namespace mkv::sweep {

struct LocalRunSummary {
  int ran = 0, done = 0, already_done = 0, held_elsewhere = 0;
  std::vector<int> failed;  // task indices
};

// Runs `selected` (task indices) with at most `parallel` processes of `binary`; progress lines on `log`.
LocalRunSummary run_local(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const std::vector<int>& selected,
                          int parallel, const std::filesystem::path& binary, std::ostream& log);

std::filesystem::path local_log_path(const SweepSpec& spec, int index);

}  // namespace mkv::sweep
