// Task states from the task folders (records, locks, score files) and Slurm's queue/accounting.
#include <gtest/gtest.h>
#include <unistd.h>

#include "support/test_support.h"
#include "sweep/sweep_status.h"
#include "sweep/sweep_test_support.h"
#include "sweep/task_record.h"

namespace mkv::sweep {
namespace {
namespace fs = std::filesystem;

TEST(SlurmQueue, ParsesSqueueAndSacct) {
  const QueueSnapshot q = parse_squeue("12|0|RUNNING|None\n12|3|PENDING|Resources\n15|N/A|RUNNING|None\n\n13|3|RUNNING|None\n");
  ASSERT_EQ(q.entries.size(), 3u);  // the non-array job is skipped
  EXPECT_EQ(q.entries[1].array_job, "12");
  EXPECT_EQ(q.entries[1].task, 3);
  EXPECT_EQ(q.entries[1].state, "PENDING");
  EXPECT_EQ(q.entries[1].reason, "Resources");
  EXPECT_EQ(q.find(3, {})->state, "RUNNING");  // the running one of two submissions wins
  EXPECT_EQ(q.find(3, {"12"})->state, "PENDING");
  EXPECT_FALSE(q.find(3, {"99"}));
  EXPECT_FALSE(q.find(1, {}));
  const AccountingSnapshot a = parse_sacct("12_2|CANCELLED by 0\n12_3|TIMEOUT\n");
  EXPECT_EQ(a.states.at("12_2"), "CANCELLED");
  EXPECT_EQ(a.states.at("12_3"), "TIMEOUT");
}

TEST(TaskRecord, WrittenWholeAndReadBack) {
  const fs::path dir = test::temp_dir() / "task";
  EXPECT_FALSE(read_task_record(dir));
  TaskRecord r;
  r.state = "failed";
  r.exit_code = 137;
  r.job = "12_3";
  r.host = "node1";
  r.pid = 4242;
  r.log = "/logs/x.out";
  write_task_record(dir, r);
  const TaskRecord back = *read_task_record(dir);
  EXPECT_EQ(back.state, "failed");
  EXPECT_EQ(back.exit_code, 137);
  EXPECT_EQ(back.job, "12_3");
  EXPECT_EQ(back.host, "node1");
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.log, "/logs/x.out");
  EXPECT_FALSE(back.time.empty());
  EXPECT_FALSE(fs::exists(dir / "task.json.tmp"));
  test::write_text(dir / "task.json", "{\"state\": ");
  EXPECT_NE(test::error_of([&] { read_task_record(dir); }).find((dir / "task.json").string()), std::string::npos);
}

TEST(TaskRecord, LockIsHeldUntilReleased) {
  const fs::path dir = test::temp_dir() / "task";
  EXPECT_EQ(probe_task_lock(dir), LockState::free);  // no folder, no lock
  const int fd = try_lock_task(dir);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(probe_task_lock(dir), LockState::held);
  EXPECT_EQ(try_lock_task(dir), -1);  // a second run stays out
  ::close(fd);
  EXPECT_EQ(probe_task_lock(dir), LockState::free);
}

class SweepStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    const fs::path data = test::needle_samples(dir_ / "samples.jsonl", 4);
    spec_ = parse_sweep(test::needle_sweep(data, dir_ / "out", {64, 128}, 2).dump(), dir_ / "sweep.json");
    tasks_ = plan_tasks(spec_);  // 8 tasks
  }
  void record(int task, const std::string& state, std::optional<int> exit_code, const std::string& job) {
    TaskRecord r;
    r.state = state;
    r.exit_code = exit_code;
    r.job = job;
    r.host = "node1";
    r.pid = 1;
    r.log = "/logs/needle_" + job + ".out";
    write_task_record(tasks_[static_cast<std::size_t>(task)].dir, r);
  }
  void score(int task) { test::write_text(tasks_[static_cast<std::size_t>(task)].score_file, "Tasks,x\nScore,1\nNulls,0/1\n"); }

  fs::path dir_;
  SweepSpec spec_;
  std::vector<SweepTask> tasks_;
};

TEST_F(SweepStatusTest, StatesFromRecordsLocksScoresAndTheQueue) {
  record(0, "done", 0, "12_0"), score(0);                // done
  record(1, "done", 0, "12_1");                          // done but its score file is gone → failed
  record(2, "running", std::nullopt, "12_2");            // killed: running, lock free, not queued → failed
  record(3, "running", std::nullopt, "12_3");            // a live run holds the lock → running
  const int lock = try_lock_task(tasks_[3].dir);
  ASSERT_GE(lock, 0);
  record(4, "failed", 143, "12_4");                      // cancelled; sacct says TIMEOUT
  record(5, "failed", 1, "12_5");                        // resubmitted: queued again → pending
  // 6: queued only by a job of another sweep → not started; 7: no record, no queue → not started
  const QueueSnapshot queue = parse_squeue("12|5|PENDING|Priority\n99|6|RUNNING|None\n");
  const AccountingSnapshot accounting = parse_sacct("12_4|TIMEOUT\n");
  const SweepStatus s = sweep_status(spec_, tasks_, queue, accounting, {"12"});
  ::close(lock);

  const std::vector<TaskState> expected = {TaskState::done,   TaskState::failed,  TaskState::failed,  TaskState::running,
                                           TaskState::failed, TaskState::pending, TaskState::pending, TaskState::pending};
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(state_name(s.tasks[i].state), std::string(state_name(expected[i]))) << "task " << i << ": " << s.tasks[i].detail;
  EXPECT_NE(s.tasks[1].detail.find("summary.csv is missing"), std::string::npos) << s.tasks[1].detail;
  EXPECT_NE(s.tasks[2].detail.find("stopped without finishing"), std::string::npos) << s.tasks[2].detail;
  EXPECT_EQ(s.tasks[2].log, "/logs/needle_12_2.out");
  EXPECT_NE(s.tasks[3].detail.find("on node1"), std::string::npos) << s.tasks[3].detail;
  EXPECT_NE(s.tasks[4].detail.find("SIGTERM"), std::string::npos) << s.tasks[4].detail;
  EXPECT_NE(s.tasks[4].detail.find("12_4 TIMEOUT"), std::string::npos) << s.tasks[4].detail;
  EXPECT_TRUE(s.tasks[5].queued);
  EXPECT_NE(s.tasks[5].detail.find("queued as job 12_5 (PENDING, Priority)"), std::string::npos) << s.tasks[5].detail;
  EXPECT_FALSE(s.tasks[6].queued);
  EXPECT_EQ(s.tasks[7].detail, "not started");
  EXPECT_EQ(s.count(TaskState::done), 1);
  EXPECT_EQ(s.count(TaskState::failed), 3);

  const auto j = status_json(spec_, tasks_, s);
  EXPECT_EQ(j["counts"]["tasks"], 8);
  EXPECT_EQ(j["counts"]["failed"], 3);
  EXPECT_EQ(j["tasks"][4]["state"], "failed");
  EXPECT_EQ(j["tasks"][4]["press"], "streaming_llm");
  EXPECT_EQ(j["tasks"][4]["budget"], 64);
  EXPECT_EQ(j["tasks"][4]["shard"], 0);
  const std::string table = status_table(spec_, tasks_, s);
  EXPECT_NE(table.find("sweep needle: 8 tasks: 1 done, 1 running, 3 failed, 3 pending"), std::string::npos) << table;
}

TEST_F(SweepStatusTest, WithoutSlurmToolsTheFoldersStillTell) {
  record(0, "running", std::nullopt, "");  // a local run that died (lock free)
  const QueueSnapshot no_queue{false, "squeue not found: queue states unknown", {}};
  const SweepStatus s = sweep_status(spec_, tasks_, no_queue, {}, {});
  EXPECT_EQ(s.tasks[0].state, TaskState::failed);
  EXPECT_EQ(s.tasks[1].state, TaskState::pending);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("squeue not found"), std::string::npos);
}

}  // namespace
}  // namespace mkv::sweep
