#include "cli/timed_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace mkv::test {
namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string command_line(const std::vector<std::string>& args) {
  std::string line = "momentkv";
  for (const std::string& a : args) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,+%@") == std::string::npos;
    if (plain) {
      line += " " + a;
      continue;
    }
    line += " '";
    for (char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return line;
}

TimedResult run_momentkv_timed(const std::vector<std::string>& args, const TimedOptions& options) {
  static int calls = 0;
  const auto base = std::filesystem::temp_directory_path() /
                    ("momentkv-timed-" + std::to_string(::getpid()) + "-" + std::to_string(++calls));
  const std::string out_path = base.string() + ".out", err_path = base.string() + ".err";
  std::vector<std::string> argv_storage = {MOMENTKV_BIN};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  TimedResult r;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    if (options.max_memory_bytes > 0) {
      const rlimit limit{options.max_memory_bytes, options.max_memory_bytes};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    r.err = std::string("fork failed: ") + std::strerror(errno);
    return r;
  }
  ::setpgid(pid, pid);  // also from the parent, so that the kill below cannot miss the group
  int status = 0;
  const auto limit = std::chrono::duration<double>(options.timeout_seconds);
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > limit) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !r.timed_out) r.signal = WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return r;
}

std::string error_convention_problem(const TimedResult& r) {
  if (r.timed_out) return "timed out (killed)";
  if (r.signal != 0) return "killed by signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")";
  if (r.exit_code == 0) return "exit code 0";
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (r.err.empty() || r.err.back() != '\n') return "stderr does not end with a newline";
  if (lines.empty()) return "empty stderr";
  for (std::size_t i = 0; i + 1 < lines.size(); ++i)
    if (lines[i].rfind("warning: ", 0) != 0)
      return "stderr line " + std::to_string(i + 1) + " is neither the error nor a 'warning: ' line";
  const std::string& last = lines.back();
  if (last.rfind("error: ", 0) != 0) return "the last stderr line does not start with 'error: '";
  if (last.size() <= 7) return "empty error message";
  for (const char* raw : {"bad_alloc", "[json.exception", "basic_filebuf", "basic_string", "vector::", "stoi",
                          "stoll", "stod", "stof", "std::", "terminate called", "libgomp"})
    if (last.find(raw) != std::string::npos) return std::string("raw library message (") + raw + ")";
  return "";
}

}  // namespace mkv::test
