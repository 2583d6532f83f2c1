// ModelRunner: every forward pass of the sessions that share one Transformer, on one thread. A
// Transformer's scratch serves one pass at a time, so sessions on several threads (the server's
// slots) hand their work to the runner: prefill chunks run one at a time, and the decode steps
// that are waiting at the same moment run as one batch (Transformer::forward_decode_batch: one
// pass over the weights, each row bitwise what the sequence gets alone). Between two decode
// batches at most one prefill chunk runs, so a long prompt does not stall the other streams.
//
// Sessions use it through SessionOptions::runner; a session that generates attach()es (the
// runner waits up to `gather_window` for every attached session to submit its step before it
// runs a batch).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "model/transformer.h"

namespace mkv {

class ModelRunner {
 public:
  // max_decode_batch: decode steps per batch (the server's slots), at most the model's batch limit.
  ModelRunner(Transformer& model, int max_decode_batch,
              std::chrono::microseconds gather_window = std::chrono::microseconds(2000));
  ~ModelRunner();  // finishes the queued work, then stops the thread
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  Transformer& model() { return model_; }

  // Runs `job` (a forward pass of one session) on the runner's thread; returns when it is done.
  // Its exception, if any, is rethrown here.
  void exclusive(const std::function<void()>& job);

  // One decode step of one session: token at `position` of the sequence in `cache`. Returns when
  // logits (n_vocab) are written. The caller checked the token and the context.
  struct DecodeStep {
    int32_t token = 0;
    int32_t position = 0;
    KvCache* cache = nullptr;
    ForwardObserver* observer = nullptr;
    float* logits = nullptr;
  };
  void decode(const DecodeStep& step);

  // A session that will submit decode steps starts / stops generating.
  void attach();
  void detach();

  struct Stats {
    int64_t decode_batches = 0;  // forward_decode_batch calls
    int64_t decode_steps = 0;    // steps they ran (steps / batches = the mean batch)
    int max_batch = 0;           // the largest batch so far
    int64_t exclusive_jobs = 0;  // prefill chunks and other single-session passes
  };
  Stats stats() const;

 private:
  struct Pending {
    DecodeStep step;
    const std::function<void()>* job = nullptr;  // set for exclusive work
    bool done = false;
    std::exception_ptr error;
  };
  void loop();
  void run_batch(std::vector<Pending*>& batch);
  void wait_done(std::unique_lock<std::mutex>& lock, Pending& pending);

  Transformer& model_;
  const int max_decode_batch_;
  const std::chrono::microseconds gather_window_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // the runner waits for work
  std::condition_variable done_;  // submitters wait for their work to finish
  std::deque<Pending*> steps_;    // decode steps waiting, oldest first
  std::deque<Pending*> jobs_;     // exclusive jobs waiting, oldest first
  int attached_ = 0;
  bool stopping_ = false;
  Stats stats_;
  std::vector<int32_t> tokens_, positions_;  // (max_decode_batch) a batch's rows
  std::vector<KvCache*> caches_;
  std::vector<ForwardObserver*> observers_;
  std::vector<float> logits_;                // (max_decode_batch, n_vocab)
  std::thread thread_;                       // last: starts after every member above exists
};

// attach() for a scope.
class RunnerAttachment {
 public:
  explicit RunnerAttachment(ModelRunner* runner) : runner_(runner) {
    if (runner_) runner_->attach();
  }
  ~RunnerAttachment() {
    if (runner_) runner_->detach();
  }
  RunnerAttachment(const RunnerAttachment&) = delete;
  RunnerAttachment& operator=(const RunnerAttachment&) = delete;

 private:
  ModelRunner* runner_;
};

}  // namespace mkv
