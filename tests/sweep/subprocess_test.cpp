// run_command: output and exit codes captured, and a program that does not finish in time is
// stopped (SIGTERM, then SIGKILL) instead of hanging the caller.
#include "sweep/subprocess.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "support/test_support.h"

namespace mkv::sweep {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(RunCommand, CapturesBothStreamsAndTheExitCode) {
  const CommandResult r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, 30s);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(RunCommand, SignalAndMissingProgramCodes) {
  EXPECT_EQ(run_command({"sh", "-c", "kill -9 $$"}, 30s).exit_code, 128 + 9);
  const CommandResult missing = run_command({"momentkv-no-such-program"}, 30s);
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("not found on PATH"), std::string::npos) << missing.err;
}

TEST(RunCommand, StopsAProgramPastItsLimit) {
  const auto start = Clock::now();
  const CommandResult r = run_command({"sh", "-c", "echo started; exec sleep 30"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_EQ(r.out, "started\n");  // what came before the limit is kept
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(RunCommand, StopsAProgramThatWritesWithoutEnd) {
  const auto start = Clock::now();
  const CommandResult r = run_command({"yes"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_LE(r.out.size(), (std::size_t{16} << 20) + 8192);  // capture stops at 16 MiB
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(RunCommand, KillsAProgramThatIgnoresSigterm) {
  // The shell ignores SIGTERM and waits on a 5 s sleep: only SIGKILL, 2 s after SIGTERM, ends it.
  const auto start = Clock::now();
  const CommandResult r = run_command({"sh", "-c", "trap '' TERM; sleep 5; echo finished"}, 200ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_EQ(r.out, "");
  const double took = seconds_since(start);
  EXPECT_GE(took, 2.0);
  EXPECT_LT(took, 4.5);
}

TEST(RunCommand, AFastProgramIsNotHeldToTheLimit) {
  const auto start = Clock::now();
  const CommandResult r = run_command({"true"}, 60s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(seconds_since(start), 2.0);
}

// Whether process `pid` is gone (or a zombie nobody has reaped yet).
bool ended(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return true;
  const std::size_t close = line.rfind(')');  // "pid (comm) state ..."
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

// A sweep task process ends with the `sweep run --local` that started it, even when that one is
// killed by SIGKILL; here a shell plays the runner: it starts `momentkv serve` with the variable set
// to its own pid, as spawn_logged does, prints the child's pid and waits.
TEST(StopWithParent, ATaskProcessEndsWhenItsParentIsKilled) {
  const std::filesystem::path dir = test::temp_dir();
  const std::string model = (dir / "tiny.gguf").string();
  ASSERT_EQ(run_command({MOMENTKV_BIN, "make-model", "--shape", "tiny-llama", "-o", model}, 60s).exit_code, 0);
  const std::string script = fmt::format("{}=$$ '{}' serve -m '{}' --port 0 >/dev/null 2>&1 & echo $!; wait",
                                         kStopWithParentEnv, MOMENTKV_BIN, model);
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t shell = ::fork();
  ASSERT_GE(shell, 0);
  if (shell == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  char buffer[32] = {};
  ASSERT_GT(::read(out[0], buffer, sizeof buffer - 1), 0);
  ::close(out[0]);
  const pid_t task = static_cast<pid_t>(std::stol(buffer));
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(ended(task)) << "the task ended before its parent";
  ::kill(shell, SIGKILL);
  ::waitpid(shell, nullptr, 0);
  const auto start = Clock::now();
  while (!ended(task) && seconds_since(start) < 10) std::this_thread::sleep_for(50ms);
  const bool gone = ended(task);
  if (!gone) ::kill(task, SIGKILL);
  EXPECT_TRUE(gone) << "momentkv serve (pid " << task << ") outlived its parent";
}

// A parent that died before the task could ask to follow it: the task ends at once.
TEST(StopWithParent, ATaskWhoseParentIsAlreadyGoneEndsAtOnce) {
  const CommandResult r =
      run_command({"env", std::string(kStopWithParentEnv) + "=1", MOMENTKV_BIN, "--version"}, 30s);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out << r.err;
  EXPECT_EQ(run_command({MOMENTKV_BIN, "--version"}, 30s).exit_code, 0);
}

}  // namespace
}  // namespace mkv::sweep
