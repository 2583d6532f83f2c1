// momentkv sweep submit | status | run: a sweep file (src/sweep/sweep_spec.h) as one Slurm array
// job, its state per task, or the same tasks as local processes. The whole file is validated
// before anything is written or submitted.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "sweep/array_script.h"
#include "sweep/local_runner.h"
#include "sweep/subprocess.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_spec.h"
#include "sweep/sweep_status.h"

namespace mkv::cli {
namespace fs = std::filesystem;
namespace {

constexpr int kSlurmDefaultMaxArraySize = 1001;  // slurm.conf MaxArraySize: indices 0..1000
// sbatch retries an unreachable controller for about MessageTimeout (10 s) and a busy one longer.
constexpr std::chrono::seconds kSbatchLimit(120);

struct LoadedSweep {
  sweep::SweepSpec spec;
  std::vector<sweep::SweepTask> tasks;
};

LoadedSweep load(const SweepOptions& o) {
  sweep::SweepDefaults defaults;
  defaults.essay = find_shared_asset("text/frankenstein.txt");
  LoadedSweep s{sweep::load_sweep_file(o.file, defaults), {}};
  s.tasks = sweep::plan_tasks(s.spec);
  return s;
}

// The momentkv the tasks run: this very binary.
fs::path this_binary() {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  MKV_CHECK(!ec, "cannot resolve /proc/self/exe: {}", ec.message());
  return exe;
}

// --array and --only narrow the tasks (both: the intersection).
std::vector<int> select_tasks(const LoadedSweep& s, const SweepOptions& o) {
  const int count = static_cast<int>(s.tasks.size());
  std::vector<int> indices;
  if (o.array.empty()) {
    for (int i = 0; i < count; ++i) indices.push_back(i);
  } else {
    indices = sweep::parse_index_ranges(o.array, count, "--array");
  }
  if (o.only.empty()) return indices;
  const sweep::SweepStatus status = sweep::query_sweep_status(s.spec, s.tasks);
  std::vector<int> out;
  for (const int i : indices) {
    const sweep::TaskStatus& t = status.tasks[static_cast<std::size_t>(i)];
    const bool failed = t.state == sweep::TaskState::failed;
    const bool idle_pending = t.state == sweep::TaskState::pending && !t.queued;
    if (failed || (o.only == "unfinished" && idle_pending)) out.push_back(i);
  }
  return out;
}

}  // namespace

int run_sweep_submit(const SweepOptions& o) {
  const LoadedSweep s = load(o);
  const std::vector<int> selected = select_tasks(s, o);
  if (selected.empty()) {
    fmt::print("sweep {}: nothing to submit (no task is {})\n", s.spec.name, o.only.empty() ? "selected" : o.only);
    return 0;
  }
  const std::string script = sweep::array_script(s.spec, s.tasks, this_binary());
  const std::vector<std::string> command = sweep::sbatch_command(s.spec, selected);
  if (s.tasks.size() > kSlurmDefaultMaxArraySize)
    fmt::print(stderr, "warning: {} tasks: above Slurm's default MaxArraySize ({}); check `scontrol show config | grep "
               "MaxArraySize` (or use fewer shards)\n", s.tasks.size(), kSlurmDefaultMaxArraySize);
  if (o.dry_run) {
    fmt::print("{}", script);
    fmt::print(stderr, "dry run: would write {} and run: {}\n", sweep::script_path(s.spec).string(),
               fmt::join(command, " "));
    return 0;
  }
  MKV_CHECK(sweep::find_program("sbatch"),
            "sbatch not found on PATH: this machine has no Slurm client (`momentkv sweep submit {} --dry-run` prints the "
            "script; `momentkv sweep run {} --local N` runs the sweep here)",
            o.file, o.file);
  const fs::path script_file = sweep::script_path(s.spec);
  fs::create_directories(script_file.parent_path());
  write_text_file(script_file, script);
  fs::create_directories(s.spec.slurm.logs);  // Slurm does not create --output's folder: a task would fail silently
  const sweep::CommandResult r = sweep::run_command(command, kSbatchLimit);
  MKV_CHECK(!r.timed_out, "sbatch did not finish within {} s and was stopped: the job may or may not be queued "
            "(`squeue --me` tells; `scontrol ping` tells whether the controller answers)", kSbatchLimit.count());
  const std::string first_err = r.err.substr(0, r.err.find('\n'));
  MKV_CHECK(r.exit_code == 0, "sbatch failed (exit {}): {}", r.exit_code, first_err.empty() ? r.out : first_err);
  const std::string job = r.out.substr(0, r.out.find_first_of(";\n"));  // --parsable: "JOBID[;CLUSTER]"
  MKV_CHECK(!job.empty(), "sbatch printed no job id");
  const std::string array = sweep::array_option(s.spec, selected);
  sweep::record_submission(s.spec, job, array);
  fmt::print("submitted job {}: tasks {} of sweep {} ({} tasks in all)\n", job, array, s.spec.name, s.tasks.size());
  fmt::print("script {}\nlogs   {}/{}_{}_<task>.out\nstatus momentkv sweep status {}\n", script_file.string(),
             s.spec.slurm.logs.string(), s.spec.name, job, o.file);
  return 0;
}

int run_sweep_status(const SweepOptions& o) {
  const LoadedSweep s = load(o);
  const sweep::SweepStatus status = sweep::query_sweep_status(s.spec, s.tasks);
  if (o.json)
    fmt::print("{}\n", sweep::status_json(s.spec, s.tasks, status).dump(1));
  else
    fmt::print("{}", sweep::status_table(s.spec, s.tasks, status));
  return 0;
}

int run_sweep_run(const SweepOptions& o) {
  MKV_CHECK(o.local >= 1, "--local must be at least 1 (processes at a time), got {}", o.local);
  const LoadedSweep s = load(o);
  const std::vector<int> selected = select_tasks(s, o);
  const sweep::LocalRunSummary r = sweep::run_local(s.spec, s.tasks, selected, o.local, this_binary(), std::cerr);
  fmt::print("sweep {}: {} task(s) run: {} done, {} failed; {} already done, {} left to another run\n", s.spec.name, r.ran,
             r.done, r.failed.size(), r.already_done, r.held_elsewhere);
  if (!r.failed.empty()) {
    std::vector<int> failed = r.failed;
    std::sort(failed.begin(), failed.end());
    fmt::print(stderr, "error: sweep {}: task(s) {} failed (logs in {}); run again to resume them\n", s.spec.name,
               sweep::index_ranges(failed), s.spec.slurm.logs.string());
    return 1;
  }
  fmt::print("results in {}; merge with: momentkv report {}\n", s.spec.output.string(), s.spec.output.string());
  return 0;
}

}  // namespace mkv::cli
