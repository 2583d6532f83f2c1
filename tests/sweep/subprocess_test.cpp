// run_command: output and exit codes captured, and a program that does not finish in time is
// stopped (SIGTERM, then SIGKILL) instead of hanging the caller.
#include "sweep/subprocess.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mkv::sweep
