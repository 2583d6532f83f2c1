#include "engine/model_runner.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/threading.h"

namespace mkv {

ModelRunner::ModelRunner(Transformer& model, int max_decode_batch, std::chrono::microseconds gather_window)
    : model_(model), max_decode_batch_(max_decode_batch), gather_window_(gather_window) {
  MKV_CHECK(max_decode_batch >= 1 && max_decode_batch <= model.max_batch(),
            "decode batch {} must be between 1 and the model's batch limit {}", max_decode_batch, model.max_batch());
  tokens_.resize(max_decode_batch);
  positions_.resize(max_decode_batch);
  caches_.resize(max_decode_batch);
  observers_.resize(max_decode_batch);
  logits_.resize(std::size_t(max_decode_batch) * model.config().n_vocab);
  thread_ = std::thread([this] { loop(); });
}

ModelRunner::~ModelRunner() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void ModelRunner::attach() {
  std::lock_guard lock(mutex_);
  ++attached_;
}

void ModelRunner::detach() {
  {
    std::lock_guard lock(mutex_);
    --attached_;
  }
  work_.notify_all();  // a batch may be waiting for this session's step
}

ModelRunner::Stats ModelRunner::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void ModelRunner::wait_done(std::unique_lock<std::mutex>& lock, Pending& pending) {
  work_.notify_all();
  done_.wait(lock, [&] { return pending.done; });
  if (pending.error) std::rethrow_exception(pending.error);
}

void ModelRunner::exclusive(const std::function<void()>& job) {
  Pending pending;
  pending.job = &job;
  std::unique_lock lock(mutex_);
  MKV_CHECK(!stopping_, "the model runner is stopping");
  jobs_.push_back(&pending);
  wait_done(lock, pending);
}

void ModelRunner::decode(const DecodeStep& step) {
  MKV_ASSERT(step.cache != nullptr && step.logits != nullptr);
  Pending pending;
  pending.step = step;
  std::unique_lock lock(mutex_);
  MKV_CHECK(!stopping_, "the model runner is stopping");
  steps_.push_back(&pending);
  wait_done(lock, pending);
}

void ModelRunner::run_batch(std::vector<Pending*>& batch) {
  const int n = int(batch.size());
  for (int i = 0; i < n; ++i) {
    const DecodeStep& s = batch[i]->step;
    tokens_[i] = s.token;
    positions_[i] = s.position;
    caches_[i] = s.cache;
    observers_[i] = s.observer;
  }
  model_.forward_decode_batch(std::span(tokens_.data(), n), std::span(positions_.data(), n),
                              std::span(caches_.data(), n), std::span(observers_.data(), n), logits_.data());
  const int n_vocab = model_.config().n_vocab;
  for (int i = 0; i < n; ++i)
    std::memcpy(batch[i]->step.logits, logits_.data() + std::size_t(i) * n_vocab, sizeof(float) * n_vocab);
}

void ModelRunner::loop() {
  adopt_num_threads();  // the process's -t, not OpenMP's default for a new thread
  std::unique_lock lock(mutex_);
  std::vector<Pending*> batch;
  while (true) {
    work_.wait(lock, [&] { return stopping_ || !steps_.empty() || !jobs_.empty(); });
    if (steps_.empty() && jobs_.empty()) return;  // stopping, nothing left
    if (!steps_.empty()) {
      // Gather: every attached session that is not waiting on a prefill chunk is expected to
      // submit a step; wait for them, but not longer than the window.
      const auto deadline = std::chrono::steady_clock::now() + gather_window_;
      work_.wait_until(lock, deadline, [&] {
        const int expected = std::min(max_decode_batch_, attached_ - int(jobs_.size()));
        return stopping_ || int(steps_.size()) >= expected;
      });
      batch.clear();
      while (!steps_.empty() && int(batch.size()) < max_decode_batch_) {
        batch.push_back(steps_.front());
        steps_.pop_front();
      }
      lock.unlock();
      std::exception_ptr error;
      try {
        run_batch(batch);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      stats_.decode_batches += 1;
      stats_.decode_steps += int64_t(batch.size());
      stats_.max_batch = std::max(stats_.max_batch, int(batch.size()));
      for (Pending* p : batch) {
        p->error = error;
        p->done = true;
      }
      done_.notify_all();
    }
    if (!jobs_.empty()) {  // one prefill chunk between decode batches
      Pending* job = jobs_.front();
      jobs_.pop_front();
      lock.unlock();
      try {
        (*job->job)();
      } catch (...) {
        job->error = std::current_exception();
      }
      lock.lock();
      stats_.exclusive_jobs += 1;
      job->done = true;
      done_.notify_all();
    }
  }
}

}  // namespace mkv
