#include "sweep/task_record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/text_file.h"

namespace mkv::sweep {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<TaskRecord> read_task_record(const fs::path& task_dir) {
  const fs::path path = task_dir / kTaskRecordFile;
  if (!fs::exists(path)) return std::nullopt;
  json j;
  try {
    j = json::parse(read_text_file(path, "task record"));
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", path.string(), json_error_text(e.what()));
  }
  MKV_CHECK(j.is_object() && j.contains("state") && j["state"].is_string(), "{}: not a task record (no \"state\")",
            path.string());
  TaskRecord r;
  r.state = j["state"].get<std::string>();
  if (j.contains("exit") && j["exit"].is_number_integer()) r.exit_code = j["exit"].get<int>();
  const auto text = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  r.job = text("job");
  r.host = text("host");
  r.log = text("log");
  r.time = text("time");
  if (j.contains("pid") && j["pid"].is_number_integer()) r.pid = j["pid"].get<int64_t>();
  return r;
}

void write_task_record(const fs::path& task_dir, TaskRecord r) {
  r.time = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
  json j = {{"state", r.state}, {"exit", nullptr}, {"job", r.job}, {"host", r.host},
            {"pid", r.pid},     {"log", r.log},    {"time", r.time}};
  if (r.exit_code) j["exit"] = *r.exit_code;
  fs::create_directories(task_dir);
  write_text_file(task_dir / kTaskRecordFile, j.dump() + "\n");
}

LockState probe_task_lock(const fs::path& task_dir) {
  const int fd = ::open((task_dir / kTaskLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? LockState::free : LockState::unknown;
  LockState state = LockState::free;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) state = errno == EWOULDBLOCK ? LockState::held : LockState::unknown;
  ::close(fd);  // closing releases the probe's shared lock
  return state;
}

int try_lock_task(const fs::path& task_dir) {
  fs::create_directories(task_dir);
  const fs::path path = task_dir / kTaskLockFile;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);  // no O_CLOEXEC: the child keeps it
  MKV_CHECK(fd >= 0, "cannot open '{}': {}", path.string(), std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  const int error = errno;
  ::close(fd);
  MKV_CHECK(error == EWOULDBLOCK, "cannot lock '{}': {}", path.string(), std::strerror(error));
  return -1;
}

std::string short_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  std::string host(name);
  return host.substr(0, host.find('.'));
}

}  // namespace mkv::sweep
