#include "sweep/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"

extern char** environ;

namespace mkv::sweep {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxCaptured = std::size_t{16} << 20;
constexpr auto kKillGrace = std::chrono::seconds(2);  // between SIGTERM and SIGKILL on timeout
using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline`, for poll(): 0 once it has passed.
int millis_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(std::min<long long>(left, 1 << 30)) : 0;
}

// Waits until `deadline` for `pid` to exit: true once it is reaped (its wait status in `status`) or
// cannot be waited for (waitpid fails; `status` untouched); false if it is still running then.
bool reaped_by(pid_t pid, Clock::time_point deadline, int& status) {
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) return false;
    ::usleep(10000);
  }
}

// Ends `pid` after a timeout: SIGTERM, then SIGKILL if it is still there after kKillGrace; reaps it.
void terminate(pid_t pid) {
  ::kill(pid, SIGTERM);
  int status = 0;
  if (reaped_by(pid, Clock::now() + kKillGrace, status)) return;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::optional<fs::path> find_program(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return fs::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return std::nullopt;
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  CommandResult r;
  MKV_ASSERT(!argv.empty());
  const std::optional<fs::path> program = find_program(argv[0]);
  if (!program) {
    r.exit_code = 127;
    r.err = argv[0] + ": not found on PATH";
    return r;
  }
  int out_pipe[2], err_pipe[2];
  MKV_CHECK(::pipe2(out_pipe, O_CLOEXEC) == 0 && ::pipe2(err_pipe, O_CLOEXEC) == 0, "cannot create a pipe: {}",
            std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<std::string> args = argv;
  std::vector<char*> cargs = c_argv(args);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, program->c_str(), &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    r.exit_code = 127;
    r.err = fmt::format("{}: cannot start: {}", program->string(), std::strerror(spawned));
    return r;
  }
  // Read both pipes until both close, so neither fills up and blocks the child.
  const Clock::time_point deadline = Clock::now() + limit;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_pipes = 2;
  char buffer[8192];
  while (open_pipes > 0) {
    const int left = millis_until(deadline);  // checked every round: a program that writes without end times out too
    const int ready = left > 0 ? ::poll(fds, 2, left) : 0;
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {  // past the limit
      r.timed_out = true;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        if (sinks[i]->size() < kMaxCaptured) sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  // Both pipes closed (or the limit passed): wait for the exit, within what is left of the limit.
  int status = 0;
  if (!r.timed_out && !reaped_by(pid, deadline, status)) r.timed_out = true;
  if (r.timed_out) {
    terminate(pid);
    r.exit_code = 124;
    return r;
  }
  r.exit_code = exit_status(status);
  return r;
}

pid_t spawn_logged(const fs::path& program, const std::vector<std::string>& args, const fs::path& log) {
  fs::create_directories(log.parent_path());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> all = {program.string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> cargs = c_argv(all);
  std::vector<std::string> env = {fmt::format("{}={}", kStopWithParentEnv, ::getpid())};
  for (char** e = environ; *e != nullptr; ++e)
    if (!std::string_view(*e).starts_with(std::string(kStopWithParentEnv) + "=")) env.emplace_back(*e);
  std::vector<char*> cenv = c_argv(env);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, cargs.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  MKV_CHECK(spawned == 0, "cannot start '{}': {}", program.string(), std::strerror(spawned));
  return pid;
}

}  // namespace mkv::sweep
