// What Slurm says about a sweep's jobs, when its tools are installed: squeue for tasks that are
// queued or running, sacct for how finished ones ended. Either tool may be missing or fail (no
// Slurm on a laptop, no accounting database on a small cluster): the snapshot then says so in
// `note` and is empty; that is never an error.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mkv::sweep {

struct QueueEntry {
  std::string array_job;  // %F: the array's job id
  int task = -1;          // %K: the array index
  std::string state;      // %T: PENDING, RUNNING, COMPLETING, ...
  std::string reason;     // %r
};

struct QueueSnapshot {
  bool available = false;
  std::string note;  // why not available (or "")
  std::vector<QueueEntry> entries;
  // The entry of array index `task` among `jobs` (all jobs when empty); the running one wins.
  std::optional<QueueEntry> find(int task, const std::set<std::string>& jobs) const;
};

// Parses `squeue -h -r -o '%F|%K|%T|%r'` output; lines that are not array tasks are skipped.
QueueSnapshot parse_squeue(const std::string& text);
// Runs squeue for this user's jobs named `job_name`.
QueueSnapshot query_queue(const std::string& job_name);

struct AccountingSnapshot {
  bool available = false;
  std::string note;
  std::map<std::string, std::string> states;  // "12_3" → "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", ...
};
// Parses `sacct -n -P -X -o JobID,State` output ("12_3|CANCELLED by 0").
AccountingSnapshot parse_sacct(const std::string& text);
// Runs sacct for these array job ids (none: not run).
AccountingSnapshot query_accounting(const std::set<std::string>& array_jobs);

}  // namespace mkv::sweep
