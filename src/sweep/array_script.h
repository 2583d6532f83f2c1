// The Slurm array script of a sweep: one bash file, `#SBATCH --array=0-(N-1)`, whose task i runs
// `momentkv eval ... --shard s/n -o DIR` for tasks[i] (sweep_plan.h). The script is idempotent and
// requeue-safe: a task whose record says done exits at once, one whose folder is locked by a live
// run leaves it alone, and any other resumes (eval appends per-sample predictions and skips the
// ones on disk). It also runs without Slurm: `SLURM_ARRAY_TASK_ID=3 bash SCRIPT`.
// Logs: slurm.logs/{name}_{arrayjob}_{task}.out (%x_%A_%a), appended across reruns.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sweep/sweep_plan.h"
#include "sweep/sweep_spec.h"

namespace mkv::sweep {

// The whole script; `binary` is the momentkv the tasks run (absolute).
std::string array_script(const SweepSpec& spec, const std::vector<SweepTask>& tasks,
                         const std::filesystem::path& binary);

// Where `sweep submit` writes the script: OUTPUT/slurm/{name}.sbatch.
std::filesystem::path script_path(const SweepSpec& spec);

// --array's value for these indices, with the sweep's %N cap ("0-7%4", "3,5").
std::string array_option(const SweepSpec& spec, const std::vector<int>& indices);

// `sbatch --parsable --array=... SCRIPT` (--array on the command line overrides the script's).
std::vector<std::string> sbatch_command(const SweepSpec& spec, const std::vector<int>& indices);

// A word as bash reads it back unchanged: bare when it holds only safe characters, else in
// single quotes (a ' inside written as '\'').
std::string shell_quote(const std::string& word);

}  // namespace mkv::sweep
