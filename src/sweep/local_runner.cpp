#include "sweep/local_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <ostream>

#include "core/error.h"
#include "sweep/subprocess.h"
#include "sweep/task_record.h"

namespace mkv::sweep {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  int index;
  Clock::time_point start;
};

bool is_done(const SweepTask& task) {
  try {
    const std::optional<TaskRecord> record = read_task_record(task.dir);
    return record && record->state == "done" && fs::exists(task.score_file);
  } catch (const MkvError&) {
    return false;  // an unreadable record: run the task again (eval resumes), which rewrites it
  }
}

std::string label(const SweepSpec& spec, const SweepTask& t) {
  return fmt::format("{}/{} shard {}/{}", spec.models[t.model].stem, t.setting.label, t.shard, t.shards);
}

// The last non-empty line of a log, for a failure message.
std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

fs::path local_log_path(const SweepSpec& spec, int index) {
  return spec.slurm.logs / fmt::format("{}_local_{}.out", spec.name, index);
}

LocalRunSummary run_local(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const std::vector<int>& selected,
                          int parallel, const fs::path& binary, std::ostream& log) {
  MKV_CHECK(parallel >= 1, "--local must be at least 1, got {}", parallel);
  LocalRunSummary summary;
  std::deque<int> queue(selected.begin(), selected.end());
  std::map<pid_t, Child> children;
  const std::size_t total = queue.size();
  std::size_t finished = 0;
  while (!queue.empty() || !children.empty()) {
    while (!queue.empty() && children.size() < static_cast<std::size_t>(parallel)) {
      const SweepTask& task = tasks.at(static_cast<std::size_t>(queue.front()));
      queue.pop_front();
      if (is_done(task)) {
        ++summary.already_done, ++finished;
        continue;
      }
      const int lock = try_lock_task(task.dir);
      if (lock < 0) {
        fmt::print(log, "task {} ({}): another run holds it; left to that run\n", task.index, label(spec, task));
        ++summary.held_elsewhere, ++finished;
        continue;
      }
      const fs::path log_path = local_log_path(spec, task.index);
      const std::vector<std::string> args = eval_arguments(spec, task);
      {
        fs::create_directories(log_path.parent_path());
        std::ofstream header(log_path, std::ios::app);
        header << fmt::format("== task {} ({}): {} {}\n", task.index, label(spec, task), binary.string(),
                              fmt::join(args, " "));
      }
      pid_t pid = -1;
      try {
        pid = spawn_logged(binary, args, log_path);
      } catch (...) {
        ::close(lock);
        throw;
      }
      ::close(lock);  // the child holds the lock now (the same open file, inherited)
      TaskRecord record;
      record.state = "running";
      record.host = short_host_name();
      record.pid = pid;
      record.log = log_path.string();
      write_task_record(task.dir, record);
      children[pid] = {task.index, Clock::now()};
      ++summary.ran;
    }
    if (children.empty()) continue;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      MKV_CHECK(errno == EINTR, "waiting for the sweep's processes failed: errno {}", errno);
      continue;
    }
    const auto it = children.find(pid);
    if (it == children.end()) continue;  // not one of ours
    const SweepTask& task = tasks.at(static_cast<std::size_t>(it->second.index));
    const double seconds = std::chrono::duration<double>(Clock::now() - it->second.start).count();
    children.erase(it);
    ++finished;
    const int code = exit_status(status);
    TaskRecord record;
    record.state = code == 0 ? "done" : "failed";
    record.exit_code = code;
    record.host = short_host_name();
    record.pid = pid;
    record.log = local_log_path(spec, task.index).string();
    write_task_record(task.dir, record);
    if (code == 0) {
      ++summary.done;
      fmt::print(log, "[{}/{}] task {} done in {:.1f} s ({})\n", finished, total, task.index, seconds, label(spec, task));
    } else {
      summary.failed.push_back(task.index);
      fmt::print(log, "[{}/{}] task {} FAILED (exit {}) after {:.1f} s ({}): {}\n  log: {}\n", finished, total, task.index,
                 code, seconds, label(spec, task), last_line(record.log), record.log);
    }
  }
  return summary;
}

}  // namespace mkv::sweep
