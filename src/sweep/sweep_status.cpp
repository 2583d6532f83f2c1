#include "sweep/sweep_status.h"

#include <signal.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>

#include "core/error.h"
#include "core/text_file.h"
#include "sweep/task_record.h"

namespace mkv::sweep {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path submissions_file(const SweepSpec& spec) { return spec.output / "slurm" / "submissions.jsonl"; }

std::string array_job_of(const std::string& job) { return job.substr(0, job.find('_')); }

std::string exit_words(int code) {
  if (code == 143 || code == 128 + SIGTERM) return "terminated (SIGTERM: cancelled, preempted or out of time)";
  if (code == 128 + SIGKILL) return "killed (SIGKILL: out of memory, or cancelled)";
  return fmt::format("eval exited with {}", code);
}

// A run that ended without finishing: how, as far as the records and Slurm tell.
void describe_failure(TaskStatus& s, const TaskRecord& record, const AccountingSnapshot& accounting) {
  if (record.state == "failed")
    s.detail = record.exit_code ? exit_words(*record.exit_code) : "failed";
  else
    s.detail = "stopped without finishing (killed, preempted, or out of time or memory)";
  if (!record.job.empty()) {
    const auto it = accounting.states.find(record.job);
    s.detail += fmt::format("; job {}{}", record.job, it == accounting.states.end() ? "" : " " + it->second);
  }
}

bool same_host(const std::string& host) { return !host.empty() && host == short_host_name(); }

}  // namespace

const char* state_name(TaskState state) {
  switch (state) {
    case TaskState::done: return "done";
    case TaskState::running: return "running";
    case TaskState::failed: return "failed";
    case TaskState::pending: return "pending";
  }
  return "?";
}

int SweepStatus::count(TaskState state) const {
  int n = 0;
  for (const TaskStatus& t : tasks) n += t.state == state;
  return n;
}

SweepStatus sweep_status(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const QueueSnapshot& queue,
                         const AccountingSnapshot& accounting, const std::set<std::string>& jobs) {
  SweepStatus status;
  if (!queue.available && !queue.note.empty()) status.notes.push_back(queue.note);
  if (!accounting.available && !accounting.note.empty()) status.notes.push_back(accounting.note);
  for (const SweepTask& task : tasks) {
    TaskStatus s;
    s.index = task.index;
    std::optional<TaskRecord> record;
    try {
      record = read_task_record(task.dir);
    } catch (const MkvError& e) {
      s.state = TaskState::failed;
      s.detail = e.what();
      status.tasks.push_back(s);
      continue;
    }
    if (record) s.job = record->job, s.log = record->log;
    const std::optional<QueueEntry> queued = queue.available ? queue.find(task.index, jobs) : std::nullopt;
    s.queued = queued.has_value();
    if (record && record->state == "done") {
      const bool scored = fs::exists(task.score_file);
      s.state = scored ? TaskState::done : TaskState::failed;
      if (!scored) s.detail = fmt::format("task.json says done but {} is missing", task.score_file.string());
      status.tasks.push_back(s);
      continue;
    }
    const LockState lock = probe_task_lock(task.dir);
    if (lock == LockState::held) {
      s.state = TaskState::running;
      s.detail = record ? fmt::format("on {} (pid {}){}", record->host, record->pid,
                                      record->job.empty() ? "" : ", job " + record->job)
                        : "starting";
    } else if (queued && (queued->state == "RUNNING" || queued->state == "COMPLETING" || queued->state == "CONFIGURING")) {
      s.state = TaskState::running;
      s.job = queued->array_job + "_" + std::to_string(task.index);
      s.detail = fmt::format("job {} {}", s.job, queued->state);
    } else if (queued) {
      s.state = TaskState::pending;
      s.detail = fmt::format("queued as job {}_{} ({}{})", queued->array_job, task.index, queued->state,
                             queued->reason.empty() || queued->reason == "None" ? "" : ", " + queued->reason);
    } else if (!record) {
      s.state = TaskState::pending;
      s.detail = "not started";
    } else if (record->state == "running" && lock == LockState::unknown) {
      // No flock on this file system: fall back on the queue, then on the pid when it ran here.
      const bool alive = record->job.empty() ? same_host(record->host) && ::kill(static_cast<pid_t>(record->pid), 0) == 0
                                             : !queue.available;
      s.state = alive ? TaskState::running : TaskState::failed;
      if (alive) s.detail = "not verified (no flock on this file system, no squeue)";
      else describe_failure(s, *record, accounting);
    } else {
      s.state = TaskState::failed;
      describe_failure(s, *record, accounting);
    }
    status.tasks.push_back(s);
  }
  return status;
}

std::set<std::string> submitted_jobs(const SweepSpec& spec) {
  std::set<std::string> jobs;
  const fs::path path = submissions_file(spec);
  if (!fs::exists(path)) return jobs;
  const std::string text = read_text_file(path, "submissions");
  for (const TextLine& line : split_lines(text)) {
    if (is_blank(line.text)) continue;
    try {
      const json row = json::parse(line.text);
      if (row.contains("job") && row["job"].is_string()) jobs.insert(row["job"].get<std::string>());
    } catch (const json::exception&) {
      // a line cut by a crash: the jobs of the other lines still count
    }
  }
  return jobs;
}

void record_submission(const SweepSpec& spec, const std::string& job, const std::string& array) {
  fs::create_directories(submissions_file(spec).parent_path());
  const std::string time =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
  append_text_file(submissions_file(spec), json({{"job", job}, {"array", array}, {"time", time}}).dump() + "\n");
}

SweepStatus query_sweep_status(const SweepSpec& spec, const std::vector<SweepTask>& tasks) {
  const std::set<std::string> jobs = submitted_jobs(spec);
  const QueueSnapshot queue = query_queue(spec.name);
  SweepStatus status = sweep_status(spec, tasks, queue, {}, jobs);
  // sacct only for the jobs of failed tasks (it can be slow on a big cluster), to say how they ended.
  std::set<std::string> to_ask;
  for (const TaskStatus& t : status.tasks)
    if (t.state == TaskState::failed && !t.job.empty()) to_ask.insert(array_job_of(t.job));
  if (to_ask.empty()) return status;
  return sweep_status(spec, tasks, queue, query_accounting(to_ask), jobs);
}

std::string status_table(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const SweepStatus& status) {
  std::string out = fmt::format("sweep {}: {} tasks: {} done, {} running, {} failed, {} pending\n", spec.name, tasks.size(),
                                status.count(TaskState::done), status.count(TaskState::running),
                                status.count(TaskState::failed), status.count(TaskState::pending));
  out += fmt::format("{:>5}  {:<8} {:<24} {:<28} {:>6}  {:<6} {}\n", "task", "state", "model", "press", "budget", "shard",
                     "detail");
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const SweepTask& t = tasks[i];
    const TaskStatus& s = status.tasks[i];
    std::string detail = s.detail;
    if (s.state == TaskState::failed && !s.log.empty()) detail += "; log " + s.log;
    out += fmt::format("{:>5}  {:<8} {:<24} {:<28} {:>6}  {:<6} {}\n", t.index, state_name(s.state),
                       spec.models[t.model].stem, t.setting.spec, t.setting.budget,
                       fmt::format("{}/{}", t.shard, t.shards), detail);
  }
  for (const std::string& note : status.notes) out += "note: " + note + "\n";
  return out;
}

nlohmann::ordered_json status_json(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const SweepStatus& status) {
  nlohmann::ordered_json j;
  j["sweep"] = spec.name;
  j["file"] = spec.file.string();
  j["output"] = spec.output.string();
  j["counts"] = {{"tasks", tasks.size()},
                 {"done", status.count(TaskState::done)},
                 {"running", status.count(TaskState::running)},
                 {"failed", status.count(TaskState::failed)},
                 {"pending", status.count(TaskState::pending)}};
  j["tasks"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const SweepTask& t = tasks[i];
    const TaskStatus& s = status.tasks[i];
    j["tasks"].push_back({{"index", t.index},
                          {"state", state_name(s.state)},
                          {"model", spec.models[t.model].stem},
                          {"press", t.setting.spec},
                          {"budget", t.setting.budget},
                          {"shard", t.shard},
                          {"shards", t.shards},
                          {"dir", t.dir.string()},
                          {"run_dir", t.run_dir.string()},
                          {"queued", s.queued},
                          {"job", s.job},
                          {"log", s.log},
                          {"detail", s.detail}});
  }
  j["notes"] = status.notes;
  return j;
}

}  // namespace mkv::sweep
