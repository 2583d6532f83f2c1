// The state of every task of a sweep, from its folder (task.json, task.lock, the score file) and,
// when available, Slurm's queue and accounting:
//   done     task.json says done and eval's score file is there
//   running  a live run holds the task's lock (or squeue shows the task running)
//   failed   the last run ended without finishing: eval exited non-zero, or it was killed
//            (task.json says running but nobody holds the lock and the queue does not have it)
//   pending  not started yet (queued, or never submitted)
// `sweep submit --only failed` resubmits the failed ones; eval resumes them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <set>
#include <string>
#include <vector>

#include "sweep/slurm_queue.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_spec.h"

namespace mkv::sweep {

enum class TaskState { done, running, failed, pending };
const char* state_name(TaskState state);

struct TaskStatus {
  int index = 0;
  TaskState state = TaskState::pending;
  bool queued = false;   // squeue lists it (pending or running)
  std::string job;       // the Slurm job of the last or current run ("12_3"), "" if none
  std::string detail;    // why, in words
  std::string log;       // the last run's log file, "" if unknown
};

struct SweepStatus {
  std::vector<TaskStatus> tasks;
  int count(TaskState state) const;
  std::vector<std::string> notes;  // what could not be checked (no squeue, no sacct)
};

// Pure: the states from the task folders and the given snapshots (tests pass their own).
// `jobs` are the sweep's array jobs (submissions.jsonl); queue entries of other jobs are ignored.
SweepStatus sweep_status(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const QueueSnapshot& queue,
                         const AccountingSnapshot& accounting, const std::set<std::string>& jobs);
// The same with squeue/sacct queried when they are on PATH.
SweepStatus query_sweep_status(const SweepSpec& spec, const std::vector<SweepTask>& tasks);

// The array jobs `sweep submit` recorded in OUTPUT/slurm/submissions.jsonl.
std::set<std::string> submitted_jobs(const SweepSpec& spec);
void record_submission(const SweepSpec& spec, const std::string& job, const std::string& array);

// A table for people, and JSON ({"sweep", "counts", "tasks": [...], "notes"}) for programs.
std::string status_table(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const SweepStatus& status);
nlohmann::ordered_json status_json(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const SweepStatus& status);

}  // namespace mkv::sweep
