// What a task folder says about its task, written by whoever runs it (the Slurm array script or
// `sweep run --local`), read by `sweep status`:
//   task.json   {"state": "running"|"done"|"failed", "exit": N|null, "job": "12_3"|"", "host",
//                "pid", "log", "time"}; replaced whole (written beside, then renamed), so a reader
//                never sees half a file
//   task.lock   held (flock, exclusive) for as long as the task's eval process runs. A task that
//               finds it held leaves the folder to that run, so two runs never append to one
//               predictions file; `status` probes it to tell a live run from a killed one.
// The order is: lock, mark running, eval, mark done/failed, unlock (at exit). So "running" with a
// free lock means the run died without marking (killed, preempted, out of time or memory).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mkv::sweep {

inline constexpr const char* kTaskRecordFile = "task.json";
inline constexpr const char* kTaskLockFile = "task.lock";

struct TaskRecord {
  std::string state;             // running | done | failed (anything else: a bad record)
  std::optional<int> exit_code;  // failed/done: the eval's exit status (128+N for signal N)
  std::string job;               // Slurm "ARRAYJOB_TASK", "" when not run by Slurm
  std::string host;
  int64_t pid = 0;
  std::string log;               // where the task's output went ("" = a terminal)
  std::string time;              // UTC, when the state was written
};

// nullopt when the folder has no task.json; MkvError naming the file when it cannot be parsed.
std::optional<TaskRecord> read_task_record(const std::filesystem::path& task_dir);
// Writes task.json atomically (a temporary file renamed over it); `time` is filled in.
void write_task_record(const std::filesystem::path& task_dir, TaskRecord record);

enum class LockState { free, held, unknown };  // unknown: the file system does not support flock
// Whether a run holds the task's lock (a shared, non-blocking probe, released at once).
LockState probe_task_lock(const std::filesystem::path& task_dir);

// Takes the task's lock (exclusive, non-blocking); returns its descriptor, -1 when another run
// holds it. The descriptor is inherited by a child process (no close-on-exec), so the lock lasts
// as long as the eval process holds it. MkvError when the lock file cannot be opened.
int try_lock_task(const std::filesystem::path& task_dir);

// This machine's short host name (what the array script records with `hostname -s`).
std::string short_host_name();

}  // namespace mkv::sweep
