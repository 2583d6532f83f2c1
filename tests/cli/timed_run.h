// Runs the momentkv binary as a child process with a wall-clock limit (fork/exec, its own process
// group, killed on timeout), a memory limit and no terminal, for the bad-input and fuzz tests:
// a hang or a crash must show up as a test failure, never stall the suite.
#pragma once

#include <string>
#include <vector>

namespace mkv::test {

struct TimedResult {
  int exit_code = -1;      // when the child exited normally
  int signal = 0;          // the signal that ended it (0 = exited)
  bool timed_out = false;  // killed after the limit
  double seconds = 0;
  std::string out, err;
};

struct TimedOptions {
  double timeout_seconds = 20;
  unsigned long long max_memory_bytes = 4ull << 30;  // RLIMIT_AS: runaway allocation fails fast
  std::string cwd;                                   // empty: the test's working directory
};

// Runs MOMENTKV_BIN with `args` (no shell), stdin from /dev/null.
TimedResult run_momentkv_timed(const std::vector<std::string>& args, const TimedOptions& options = {});

// The command as one could paste it into a shell (each argument quoted where needed).
std::string command_line(const std::vector<std::string>& args);

// Empty when `r` follows the error convention for a failed run: a non-zero exit, stderr holding
// exactly one line starting with "error: " (after any "warning: " lines), and no raw library
// message (bad_alloc, [json.exception...], basic_filebuf, ...). Otherwise says what is wrong.
std::string error_convention_problem(const TimedResult& r);

}  // namespace mkv::test
