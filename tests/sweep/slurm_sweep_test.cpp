// The sweep on a real Slurm: a single-node cluster (Debian's slurm-wlm + munge, started by
// tests/sweep/slurm_cluster.sh in a temporary folder), the needle model on 2 presses × 2 budgets ×
// 2 shards = 8 array tasks. One task is cancelled while it runs and resubmitted with --only failed;
// then every prediction and the merged report must equal the same sweep run locally, one process
// at a time, with no sample lost or duplicated. Skips only when Slurm/munge are not installed (or
// not root); the cluster is torn down at the end, also on failure (and by a watchdog if the test
// process is killed).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <regex>
#include <thread>

#include "support/test_support.h"
#include "sweep/sweep_test_support.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const fs::path kClusterScript = fs::path(MOMENTKV_SOURCE_DIR) / "tests" / "sweep" / "slurm_cluster.sh";

// The last lines of a log file, for a failure message.
std::string tail_of(const fs::path& path, std::size_t lines) {
  if (!fs::exists(path)) return "";
  const std::string text = test::read_file(path);
  std::size_t start = text.size();  // start of the last `lines` lines (the final newline ends the last)
  for (std::size_t n = 0; n <= lines; ++n) {
    if (start == 0) return text;
    const std::size_t newline = text.rfind('\n', start - 1);
    if (newline == std::string::npos) return text;
    start = newline;
  }
  return text.substr(start + 1);
}

// Stops the cluster when the test leaves, however it leaves; on a failure it first prints the
// daemons' logs and the tasks' logs, so a run that failed on another machine can be read afterwards.
struct ClusterGuard {
  fs::path dir, task_logs;
  ~ClusterGuard() {
    if (dir.empty()) return;
    if (::testing::Test::HasFailure()) {
      for (const char* log : {"slurmctld.log", "slurmd.log", "daemons.err"})
        std::cout << "--- " << (dir / log).string() << " (last lines)\n" << tail_of(dir / log, 25);
      if (fs::is_directory(task_logs))
        for (const fs::directory_entry& e : fs::directory_iterator(task_logs))
          std::cout << "--- " << e.path().string() << " (last lines)\n" << tail_of(e.path(), 8);
      std::cout << std::flush;
    }
    test::run_shell("bash " + kClusterScript.string() + " stop " + dir.string());
  }
};

// A line per stage with the seconds since the test began: where a run stalled shows in its output.
struct Stages {
  Clock::time_point start = Clock::now();
  void operator()(const std::string& what) const {
    std::cout << fmt::format("[slurm test +{:.0f} s] {}", std::chrono::duration<double>(Clock::now() - start).count(), what)
              << std::endl;
  }
};

// Polls `done` every 100 ms for up to `seconds`; false on timeout.
bool wait_for(double seconds, const std::function<bool()>& done) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

std::size_t lines_in(const fs::path& path) {
  if (!fs::exists(path)) return 0;
  const std::string text = test::read_file(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(SlurmSweep, KilledTaskResubmittedMatchesTheLocalRun) {
  // Every wait below is bounded, and their sum (with the cluster's start and stop) stays under the
  // 900 s ctest gives the sweep tests, so a stall fails here with the logs printed instead of being
  // killed silently.
  const fs::path dir = test::temp_dir();
  const Stages stage;
  ClusterGuard guard;
  guard.task_logs = dir / "slurm_out" / "logs";
  const test::ShellRun started = test::run_shell(fmt::format("bash {} start {} {}", kClusterScript.string(),
                                                             (dir / "cluster").string(), ::getpid()));
  guard.dir = dir / "cluster";
  if (started.exit_code == 77)
    GTEST_SKIP() << "no Slurm test cluster: " << started.err
                 << "(scripts/test.sh installs Debian's slurm-wlm and munge; the test needs root)";
  ASSERT_EQ(started.exit_code, 0) << "the single-node Slurm cluster did not start:\n" << started.err;
  stage("cluster up" + (started.err.empty() ? "" : " (" + started.err.substr(0, started.err.find('\n')) + ")"));
  const std::string env = "SLURM_CONF=" + (dir / "cluster" / "slurm.conf").string() + " ";
  const auto momentkv = [&](const std::string& args) { return test::run_shell(env + MOMENTKV_BIN + " " + args); };

  // 30 RULER samples of ~2K tokens: 15 per shard, a few seconds per task.
  const fs::path data = test::needle_samples(dir / "samples.jsonl", 0);
  json sweep = test::needle_sweep(data, dir / "slurm_out", {64, 128}, 2);
  sweep["slurm"] = {{"partition", "debug"}, {"time", "00:10:00"}};
  const fs::path file = dir / "sweep.json";
  test::write_text(file, sweep.dump(1));
  const auto status = [&] {
    const test::ShellRun r = momentkv("sweep status --json " + file.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  };

  test::ShellRun r = momentkv("sweep submit " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("submitted job (\\d+): tasks 0-7 "))) << r.out;
  const std::string job = m[1];
  stage("submitted job " + job);

  // Cancel a task mid-run: one that is running and has written some but not all of its 15 rows.
  int killed = -1;
  std::size_t rows_at_kill = 0;
  ASSERT_TRUE(wait_for(120, [&] {
    const json s = status();
    for (const json& t : s["tasks"]) {
      const fs::path predictions = fs::path(t["run_dir"].get<std::string>()) / "pred" / "samples.jsonl";
      const std::size_t rows = lines_in(predictions);
      if (t["state"] == "running" && rows >= 1 && rows <= 8) {
        killed = t["index"].get<int>();
        rows_at_kill = rows;
        return true;
      }
    }
    return false;
  })) << "no task was seen running with 1-8 predictions";
  r = test::run_shell(env + fmt::format("timeout 60 scancel {}_{}", job, killed));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  stage(fmt::format("cancelled task {} at {} predictions", killed, rows_at_kill));

  // The array finishes with the cancelled task failed, its predictions partial.
  json s;
  ASSERT_TRUE(wait_for(150, [&] {
    s = status();
    return s["counts"]["running"] == 0 && s["counts"]["pending"] == 0;
  })) << s.dump(1);
  stage("the array finished");
  EXPECT_EQ(s["counts"]["done"], 7) << s.dump(1);
  ASSERT_EQ(s["counts"]["failed"], 1) << s.dump(1);
  const json& failed = s["tasks"][killed];
  EXPECT_EQ(failed["state"], "failed") << failed.dump();
  EXPECT_EQ(failed["job"], fmt::format("{}_{}", job, killed));
  const fs::path killed_predictions = fs::path(failed["run_dir"].get<std::string>()) / "pred" / "samples.jsonl";
  const std::size_t rows_after_kill = lines_in(killed_predictions);
  EXPECT_GE(rows_after_kill, rows_at_kill);
  EXPECT_LT(rows_after_kill, 15u) << "the task finished before it was cancelled";
  const test::ShellRun text_status = momentkv("sweep status " + file.string());
  EXPECT_NE(text_status.out.find("8 tasks: 7 done, 0 running, 1 failed, 0 pending"), std::string::npos) << text_status.out;

  // Resubmit only the failed task; it resumes from its partial predictions.
  r = momentkv("sweep submit " + file.string() + " --only failed");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(fmt::format(": tasks {} of sweep needle", killed)), std::string::npos) << r.out;
  ASSERT_TRUE(wait_for(120, [&] {
    s = status();
    return s["counts"]["done"] == 8;
  })) << s.dump(1);
  stage("the resubmitted task finished");
  EXPECT_EQ(lines_in(killed_predictions), 15u);

  // The same sweep without Slurm, one process at a time.
  sweep["output"] = (dir / "local_out").string();
  const fs::path local_file = dir / "sweep_local.json";
  test::write_text(local_file, sweep.dump(1));
  r = test::run_momentkv("sweep run " + local_file.string() + " --local 1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  stage("the local run finished");

  // Every sample of every configuration exactly once, with the same prediction.
  const test::Predictions on_slurm = test::read_predictions(dir / "slurm_out");
  const test::Predictions local = test::read_predictions(dir / "local_out");
  EXPECT_EQ(on_slurm.duplicates, 0);
  EXPECT_EQ(local.duplicates, 0);
  EXPECT_EQ(on_slurm.by_key.size(), 4u * 30);
  EXPECT_EQ(on_slurm.by_key, local.by_key);

  // And the merged reports are the same table.
  const test::ShellRun slurm_report = test::run_momentkv("report " + (dir / "slurm_out").string());
  const test::ShellRun local_report = test::run_momentkv("report " + (dir / "local_out").string());
  ASSERT_EQ(slurm_report.exit_code, 0) << slurm_report.err;
  ASSERT_EQ(local_report.exit_code, 0) << local_report.err;
  EXPECT_EQ(slurm_report.out, local_report.out);
  EXPECT_EQ(slurm_report.err, "") << "no shard missing or counted twice";
  EXPECT_NE(slurm_report.out.find("| stories-needle-2k | snapkv:kernel=15 | 128 |"), std::string::npos) << slurm_report.out;
}

}  // namespace
}  // namespace mkv
