// Starting other programs without a shell (arguments passed as they are): the Slurm tools
// (sbatch, squeue, sacct) with their output captured, and the local runner's eval processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mkv::sweep {

// The program's full path when `name` is on $PATH (or is a path to an executable); nullopt otherwise.
std::optional<std::filesystem::path> find_program(const std::string& name);

struct CommandResult {
  int exit_code = -1;      // 128+N when killed by signal N; 127 when it could not be started; 124 on timeout
  bool timed_out = false;  // it ran past the limit and was killed
  std::string out, err;
};
// Runs argv[0] (looked up on $PATH) and waits at most `limit`; stdout and stderr captured (each up
// to 16 MiB). Past the limit the program gets SIGTERM, then SIGKILL 2 s later, and the result is
// exit_code 124 with timed_out set: a Slurm client retrying an unreachable controller never hangs us.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds limit);

// The environment variable spawn_logged() sets to the caller's pid: a momentkv process started
// with it ends (SIGTERM) when that process dies, even by SIGKILL (app/main.cpp), so that a killed
// `sweep run --local` leaves no task running on its own.
inline constexpr const char* kStopWithParentEnv = "MOMENTKV_STOP_WITH_PARENT";

// Starts `program` with `args` in the background, stdin from /dev/null and stdout + stderr
// appended to `log`, and kStopWithParentEnv set to this process's pid; descriptors without
// close-on-exec (a task lock) are inherited. Returns the pid; MkvError when it cannot be started.
pid_t spawn_logged(const std::filesystem::path& program, const std::vector<std::string>& args,
                   const std::filesystem::path& log);

// Exit status of a waitpid() status word: the exit code, or 128+N for signal N.
int exit_status(int wait_status);

}  // namespace mkv::sweep
