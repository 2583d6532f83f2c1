// The model object of momentkv._momentkv: loading, tokenizing, logits and generation (blocking,
// or streamed by a worker thread).
//
// Streaming. generate(stream=True) runs the same generate() on a worker std::thread that pushes
// each final text piece into a queue; TextStream.__next__ waits on the queue with the GIL
// released (in slices of kPollInterval, checking signals between them) and returns one piece.
// close() (called by the Python generator's close or garbage collection, and for every live
// stream at interpreter exit) or a KeyboardInterrupt cancels the worker and joins it. The
// worker's polls check the cancellation instead of signals (per layer, per token, and before
// each call into a Python press); a Python press's call that is running when the stream is
// cancelled gets a KeyboardInterrupt raised in it (PyThreadState_SetAsyncExc, repeated until the
// worker ends). The worker touches Python only inside a Python press; the TextStream keeps the
// Model alive until the worker has finished.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/threading.h"
#include "engine/generation.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "gil.h"
#include "model/transformer.h"
#include "python_press.h"
#include "python_values.h"
#include "text/chat_template.h"
#include "text/sampler.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace momentkv_python {

namespace py = pybind11;

constexpr int kUbatch = 512;  // the CLI's -ub default: same chunks, same logits

// Everything one generation needs, validated with the GIL held before any computation starts.
struct GenerationJob {
  std::vector<int32_t> prompt;
  mkv::PressConfig press;
  std::optional<PyPressConfig> py_press;  // a press written in Python (then `press` is unused)
  mkv::SamplerParams sampler;
  mkv::GenerationParams params;
};

struct Model {
  std::string path;
  int threads = 0;
  int ctx = 0;
  mkv::MatmulPrecision precision = mkv::MatmulPrecision::Exact;
  mkv::KvStorage kv_storage = mkv::KvStorage::F32;  // of every session's cache (-ctk/-ctv)
  std::unique_ptr<mkv::GgufFile> file;  // outlives the transformer, which views its weights
  std::unique_ptr<mkv::Transformer> transformer;
  std::unique_ptr<mkv::Tokenizer> tokenizer;

  Model(const std::string& model_path, std::optional<int> n_threads, int n_ctx, const std::string& prec,
        const std::string& cache_type)
      : path(model_path),
        threads(n_threads.value_or(0)),
        ctx(n_ctx),
        precision(parse_precision(prec)),
        kv_storage(parse_cache_type(cache_type)) {
    if (threads < 0) throw py::value_error("threads must be >= 0 (0 or None: every hardware thread)");
    if (threads > mkv::max_thread_count())
      throw py::value_error("threads=" + std::to_string(threads) + " is above the limit of " +
                            std::to_string(mkv::max_thread_count()));
    if (ctx < 0) throw py::value_error("ctx must be >= 0 (0: the model's context length)");
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(ENOENT, "No such file or directory", path).ptr());
      throw py::error_already_set();
    }
    GilRelease release;  // loading touches no process-wide setting: no g_compute
    file = std::make_unique<mkv::GgufFile>(mkv::GgufFile::open(path));
    transformer = std::make_unique<mkv::Transformer>(*file, kUbatch);
    tokenizer = mkv::Tokenizer::create(mkv::Vocab::from_gguf(*file));
  }

  int n_vocab() const { return transformer->config().n_vocab; }
  int n_ctx() const { return ctx > 0 ? ctx : transformer->config().context_length; }

  // The process-wide settings this model runs with, applied on the computing thread (OpenMP's
  // thread count is a per-thread setting). Called with g_compute held.
  void apply_settings() const {
    mkv::set_num_threads(threads);
    mkv::set_matmul_precision(precision);
  }

  mkv::SessionOptions session_options(mkv::Press* press) const {
    mkv::SessionOptions so;
    so.ubatch = kUbatch;
    so.n_ctx = ctx;
    so.press = press;
    so.kv_storage = kv_storage;
    return so;
  }

  // Token ids from Python ints, each checked to be in [0, n_vocab) (ValueError otherwise).
  std::vector<int32_t> checked_ids(const std::vector<int64_t>& ids) const {
    const int n = tokenizer->n_vocab();
    std::vector<int32_t> out(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= n)
        throw py::value_error("token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                              " is out of range [0, " + std::to_string(n) + ")");
      out[i] = static_cast<int32_t>(ids[i]);
    }
    return out;
  }

  std::vector<int32_t> tokenize(const py::handle& text, bool add_bos, bool parse_special) const {
    return tokenizer->encode(utf8_text(text, "text"), add_bos, parse_special);
  }

  py::str detokenize(const std::vector<int64_t>& id_list, bool render_special) const {
    const std::vector<int32_t> ids = checked_ids(id_list);
    return to_str(tokenizer->decode(ids, render_special));
  }

  py::array_t<float> logits(const std::vector<int64_t>& id_list) {
    check_not_in_press();
    const std::vector<int32_t> ids = checked_ids(id_list);
    if (ids.empty()) throw py::value_error("logits: no token ids given");
    if (static_cast<int64_t>(ids.size()) > n_ctx())
      throw py::value_error("logits: " + std::to_string(ids.size()) + " tokens do not fit the context of " +
                            std::to_string(n_ctx()) + " (raise ctx)");
    const int nv = n_vocab();
    py::array_t<float> out({static_cast<py::ssize_t>(ids.size()), static_cast<py::ssize_t>(nv)});
    float* data = out.mutable_data();
    compute_polling_signals([&](Poller& poller) {
      apply_settings();
      mkv::Session session(*transformer, session_options(nullptr));
      session.set_observer(&poller);
      session.evaluate(ids, data);
    });
    return out;
  }

  // Prompt ids from a str (encoded like `momentkv generate -p`) or a list of ids (used as given).
  std::vector<int32_t> prompt_ids(const py::handle& prompt) const {
    std::vector<int32_t> ids;
    if (py::isinstance<py::str>(prompt)) {
      ids = tokenizer->encode(utf8_text(prompt, "prompt"), /*add_special=*/true, /*parse_special=*/true);
    } else {
      ids = checked_ids(prompt.cast<std::vector<int64_t>>());  // the Python side passes a list of ints
    }
    if (ids.empty()) throw py::value_error("the prompt is empty (and the model adds no BOS token)");
    if (static_cast<int64_t>(ids.size()) >= n_ctx())
      throw py::value_error("prompt of " + std::to_string(ids.size()) + " tokens does not fit the context of " +
                            std::to_string(n_ctx()) + " (raise ctx)");
    return ids;
  }

  std::vector<int32_t> chat_ids(const std::vector<std::pair<py::str, py::str>>& messages,
                                const std::string& chat_template) const {
    std::vector<mkv::ChatMessage> ms;
    for (const auto& [role, content] : messages)
      ms.push_back({utf8_text(role, "a message's role"), utf8_text(content, "a message's content")});
    const mkv::ChatTemplate t = mkv::ChatTemplate::for_vocab(
        tokenizer->vocab(), chat_template, "pass chat_template=\"llama3\", \"chatml\" or \"qwen3\"");
    const std::string text = t.render(ms, /*add_generation_prompt=*/true);
    const mkv::Vocab& v = tokenizer->vocab();
    const bool has_bos = v.bos >= 0 && text.starts_with(tokenizer->token_to_piece(v.bos, true));
    return tokenizer->encode(text, /*add_special=*/!has_bos, /*parse_special=*/true);
  }

  GenerationJob job(std::vector<int32_t> prompt, int max_tokens, float temperature, float top_p, int top_k,
                    float min_p, std::optional<int64_t> seed, const py::object& press,
                    std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
                    std::vector<std::string> stop, bool ignore_eos) const {
    if (max_tokens < -1) throw py::value_error("max_tokens must be -1 (unlimited) or >= 0");
    if (seed && *seed < 0) throw py::value_error("seed must be >= 0 (None: a random seed)");
    GenerationJob j;
    j.prompt = std::move(prompt);
    resolve_press(press, kv_budget, compression_ratio, j.press, j.py_press);
    j.sampler.temperature = temperature;
    j.sampler.top_k = top_k;
    j.sampler.top_p = top_p;
    j.sampler.min_p = min_p;
    j.sampler.seed = seed ? static_cast<uint64_t>(*seed) : std::random_device{}();
    mkv::Sampler check(j.sampler);  // MkvError (ValueError) for invalid parameters, now
    j.params.max_new_tokens = max_tokens;
    j.params.ignore_eos = ignore_eos;
    j.params.stop = std::move(stop);
    j.params.reply_starts_text = false;  // like the CLI: the reply continues the prompt's text
    return j;
  }

  // Runs one generation on the calling thread; g_compute must be held and the GIL released.
  // `on_text` is called on this thread with each piece, `poller` between layers and tokens;
  // `cancellation` is a stream's (null otherwise), for a Python press.
  mkv::GenerationResult run(const GenerationJob& j, const std::function<bool(std::string_view)>& on_text,
                            Poller& poller, Cancellation* cancellation = nullptr) {
    apply_settings();
    std::unique_ptr<mkv::Press> p = make_press(j.press, j.py_press, cancellation);
    mkv::Session session(*transformer, session_options(p.get()));
    session.set_observer(&poller);
    mkv::Sampler sampler(j.sampler);
    mkv::GenerationCallbacks callbacks;
    callbacks.pick = [&](std::span<const float> logits) {
      poller.poll();
      return sampler.sample(logits);
    };
    callbacks.on_text = on_text;
    return mkv::generate(session, *tokenizer, {j.prompt, {}}, j.params, callbacks);
  }

  py::dict generate_blocking(const GenerationJob& j) {
    mkv::GenerationResult result;
    compute_polling_signals([&](Poller& poller) { result = run(j, {}, poller); });
    py::dict d;
    d["text"] = to_str(result.text);
    d["tokens"] = result.tokens;
    d["prompt_tokens"] = result.prompt_tokens;
    d["stop_reason"] = mkv::stop_reason_name(result.stop);
    d["prefill_seconds"] = result.prefill_seconds;
    d["decode_seconds"] = result.decode_seconds;
    return d;
  }
};

// The streaming half: a worker thread runs the generation, pieces come back through a queue.
// Every method is called with the GIL held (pybind11 destroys the object with it held too).
class TextStream {
 public:
  TextStream(py::object model_ref, Model& model, GenerationJob job)
      : model_ref_(std::move(model_ref)), model_(model), job_(std::move(job)) {
    worker_ = std::thread([this] { work(); });
  }
  ~TextStream() { stop(); }

  py::str next() {
    while (true) {
      std::optional<std::string> piece;
      bool finished = false;
      {
        GilRelease release;
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, kPollInterval, [&] { return !queue_.empty() || done_; });
        if (!queue_.empty()) {
          piece = std::move(queue_.front());
          queue_.pop_front();
        } else if (done_) {
          finished = true;
        }
      }
      if (piece) return to_str(*piece);
      if (finished) {
        stop();
        if (error_) {
          std::exception_ptr e = std::exchange(error_, nullptr);
          std::rethrow_exception(e);  // MkvError -> ValueError by the translator
        }
        throw py::stop_iteration();
      }
      if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt while waiting: cancel, then raise
        stop();
        throw py::error_already_set();
      }
    }
  }

  // Cancels the generation (if still running) and waits for the worker. Safe to call twice.
  void close() {
    stop();
    std::lock_guard lock(mutex_);
    queue_.clear();
  }

 private:
  // Cancels the worker and waits for it, the GIL released while waiting. A Python press's call
  // that is running gets a KeyboardInterrupt, again every kPollInterval until the worker ends (a
  // score() that catches one). Two threads may call it at once (close() and __next__).
  void stop() {
    cancellation_.request();
    do {
      cancellation_.interrupt_python();
    } while (!wait_done(kPollInterval));
    GilRelease release;
    std::lock_guard lock(join_mutex_);
    if (worker_.joinable()) worker_.join();
  }

  // Waits up to `timeout` for the worker to finish; true when it has.
  bool wait_done(std::chrono::milliseconds timeout) {
    GilRelease release;
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return done_; });
  }

  void work() {
    try {
      auto check = [this] { cancellation_.check(); };
      ComputeLock compute(check);  // a stream waiting for another computation can be cancelled
      Poller poller(check);        // signals are polled by the consumer
      auto on_text = [this](std::string_view text) {
        if (cancellation_.requested()) return false;
        std::lock_guard lock(mutex_);
        queue_.emplace_back(text);
        changed_.notify_all();
        return true;
      };
      model_.run(job_, on_text, poller, &cancellation_);
    } catch (const Cancelled&) {
    } catch (abi::__forced_unwind&) {
      throw;
    } catch (...) {
      // Once cancelled, an error is the cancellation's doing (the KeyboardInterrupt raised in a
      // Python press) or of no interest to a consumer that has stopped reading.
      if (!cancellation_.requested()) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
    }
    std::lock_guard lock(mutex_);
    done_ = true;
    changed_.notify_all();
  }

  py::object model_ref_;  // keeps the Model alive while the worker runs (destroyed after the join)
  Model& model_;
  GenerationJob job_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  Cancellation cancellation_;
  std::mutex join_mutex_;
  std::thread worker_;
};

}  // namespace momentkv_python
