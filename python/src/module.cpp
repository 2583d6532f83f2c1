// momentkv._momentkv: the C++ half of the Python module `momentkv` (python/momentkv/ is the other
// half: keyword handling, press objects, the streaming generator).
//
// Threads and the GIL. Every computation (prefill, decode, evaluate) runs with the GIL released
// and under one process-wide mutex, taken after the GIL is released (so a thread waiting for the
// mutex never holds the GIL): the thread count and matmul precision are process-wide settings,
// a Model's Transformer has one set of scratch buffers, and OpenMP already uses every core. While
// the GIL is released no Python object is touched; text is converted to Python afterwards.
//
// Ctrl-C. A long computation polls at most every kPollInterval: from the token picker (every
// generated token) and from a forward observer (every layer of a prefill or an evaluate). On the
// caller's thread a poll briefly takes the GIL and calls PyErr_CheckSignals(); when a handler
// raised (KeyboardInterrupt), the poll throws Interrupted, which unwinds the engine (the Session
// is local to the call and dropped), and the binding rethrows the pending Python error with the
// GIL held. Only the main thread receives signals; elsewhere a poll finds none.
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
//
// Interpreter exit. Once Python is finalizing, CPython (before 3.14) force-unwinds a thread that
// takes the GIL (pthread_exit: abi::__forced_unwind). Our frames cannot be unwound that way: a
// catch (...) would swallow it (abort: "exception not rethrown"), and destructors would take the
// GIL again (std::terminate) or release one the thread does not hold. So every place here that
// takes the GIL on a computing thread parks that thread until the process exits instead (as
// CPython 3.14 does itself), and catch (...) blocks rethrow a forced unwind. Once momentkv's atexit
// handler has closed the streams it marks the exit, and from then on a thread that released the
// GIL to compute parks before taking it again: finalization may have finished by then, and taking
// the GIL after that crashes (CPython 3.11 frees the runtime's locks) instead of unwinding.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <Python.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/threading.h"
#include "engine/compress_later.h"
#include "engine/generation.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"
#include "kv/press_catalog.h"
#include "kv/presses/allocation.h"
#include "kv/presses/nc_press.h"
#include "kv/presses/observation_window.h"
#include "kv/presses/scorer_press.h"
#include "kv/presses/snapkv.h"
#include "model/model_config.h"
#include "model/transformer.h"
#include "ops/matmul_int8.h"
#include "text/chat_template.h"
#include "text/sampler.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace py = pybind11;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr int kUbatch = 512;  // the CLI's -ub default: same chunks, same logits

std::timed_mutex g_compute;  // one computation at a time in the process (see the header comment)

// Thrown by a poll that found a pending Python error (KeyboardInterrupt); the error stays set in
// the thread state until the binding rethrows it as py::error_already_set with the GIL held.
struct Interrupted {};
// Thrown inside a streaming worker when the consumer cancelled.
struct Cancelled {};

// ---- Taking the GIL on a computing thread (see "Interpreter exit" above) -------------------------

[[noreturn]] void park_until_exit() {
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Set by _mark_interpreter_exit (momentkv's atexit handler, on the thread that then finalizes
// Python). From then on a computing thread parks before taking the GIL: once Py_FinalizeEx has
// finished, the runtime's locks are freed (CPython 3.11), and taking the GIL (PyThreadState_New,
// PyEval_RestoreThread) would crash in the process's exit handlers instead of force-unwinding the
// thread. The finalizing thread itself keeps taking the GIL (objects released during finalization).
std::atomic<bool> g_interpreter_exiting{false};
std::thread::id g_finalizing_thread;  // written once, before g_interpreter_exiting is set

void mark_interpreter_exit() {
  g_finalizing_thread = std::this_thread::get_id();
  g_interpreter_exiting.store(true, std::memory_order_release);
}

// Called only where this thread does not hold the GIL (a thread parked with the GIL would stop the
// finalization).
void park_if_interpreter_exiting() {
  if (g_interpreter_exiting.load(std::memory_order_acquire) && std::this_thread::get_id() != g_finalizing_thread)
    park_until_exit();
}

// Whether this thread is inside a GilRelease scope of its own and not inside a GilAcquire within it:
// it does not hold the GIL. (Stream workers are joined before the exit mark.)
thread_local bool t_gil_released = false;

// Runs f, which takes the GIL or runs Python code; parks the thread when Python is finalizing.
template <class F>
decltype(auto) parking_at_exit(F&& f) {
  try {
    return f();
  } catch (abi::__forced_unwind&) {
    park_until_exit();  // never returns: the forced unwind is neither rethrown nor finished
  }
}

// py::gil_scoped_acquire, parking at interpreter exit.
class GilAcquire {
 public:
  GilAcquire() {
    if (t_gil_released) park_if_interpreter_exiting();
    parking_at_exit([&] { gil_.emplace(); });
    outer_released_ = std::exchange(t_gil_released, false);
  }
  ~GilAcquire() { t_gil_released = outer_released_; }
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  std::optional<py::gil_scoped_acquire> gil_;
  bool outer_released_ = false;
};

// py::gil_scoped_release, whose reacquisition parks at interpreter exit.
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()), outer_released_(std::exchange(t_gil_released, true)) {}
  ~GilRelease() {
    park_if_interpreter_exiting();
    parking_at_exit([&] { PyEval_RestoreThread(state_); });
    t_gil_released = outer_released_;
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
  bool outer_released_;
};

void poll_signals_now() {
  GilAcquire gil;
  if (PyErr_CheckSignals() != 0) throw Interrupted{};
}

// Runs `check` at most every kPollInterval: poll_signals_now on the caller's thread, a stream's
// cancellation check on its worker. Called with the GIL released.
class Poller : public mkv::ForwardObserver {
 public:
  explicit Poller(std::function<void()> check) : check_(std::move(check)) {}
  void poll() {
    const auto now = Clock::now();
    if (now - last_ < kPollInterval) return;
    last_ = now;
    check_();
  }
  void on_queries(int, int, const float*, const int32_t*, const mkv::KvCache&) override { poll(); }

 private:
  std::function<void()> check_;
  Clock::time_point last_ = Clock::now();
};

// Holds g_compute; taken with the GIL released. While another computation (a stream being
// produced, another thread) holds it, `between_tries` runs every kPollInterval: it polls for
// signals (a Ctrl-C while waiting) or checks a stream's cancellation, and may throw.
class ComputeLock {
 public:
  explicit ComputeLock(const std::function<void()>& between_tries) {
    while (!g_compute.try_lock_for(kPollInterval))
      if (between_tries) between_tries();
  }
  ~ComputeLock() { g_compute.unlock(); }
  ComputeLock(const ComputeLock&) = delete;
  ComputeLock& operator=(const ComputeLock&) = delete;
};

// A stream's cancellation, shared by its consumer (TextStream) and the worker running the
// generation, Python press included.
class Cancellation {
 public:
  bool requested() const { return requested_; }
  // Worker side: throws Cancelled once cancelled.
  void check() const {
    if (requested_) throw Cancelled{};
  }
  // Worker side, GIL held: brackets a call into a Python press (see InPythonPress).
  void enter_python() {
    python_thread_ = PyThread_get_thread_ident();
    in_python_ = true;
  }
  void leave_python() { in_python_ = false; }
  // Consumer side.
  void request() { requested_ = true; }
  // Consumer side, GIL held: a Python press's call that is running gets a KeyboardInterrupt at
  // its next bytecode (a score() that never returns would keep the worker forever).
  void interrupt_python() const {
    if (in_python_) PyThreadState_SetAsyncExc(python_thread_, PyExc_KeyboardInterrupt);
  }

 private:
  std::atomic<bool> requested_ = false;
  bool in_python_ = false;  // read and written with the GIL held
  unsigned long python_thread_ = 0;
};

// Python text from engine bytes (invalid UTF-8 from byte-fallback tokens becomes U+FFFD).
py::str to_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// The UTF-8 bytes of a Python str argument: TypeError for another type (bytes included: text is
// str), ValueError naming the argument for a str that is not valid text (a lone surrogate).
std::string utf8_text(const py::handle& text, const std::string& what) {
  if (!py::isinstance<py::str>(text))
    throw py::type_error(what + " must be a str, got " + std::string(py::str(py::type::handle_of(text).attr("__name__"))));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (!data) {
    const std::string reason = py::error_already_set().what();  // fetches (clears) the UnicodeEncodeError
    throw py::value_error(what + " is not valid UTF-8 text: " + reason);
  }
  return std::string(data, std::size_t(size));
}

// Runs f(poller) with the GIL released and g_compute held; `poller` polls for signals, and a
// KeyboardInterrupt it found is raised here (with the GIL held).
template <class F>
void compute_polling_signals(F&& f) {
  bool interrupted = false;
  {
    GilRelease release;
    try {
      ComputeLock lock(poll_signals_now);
      Poller poller(poll_signals_now);
      f(poller);
    } catch (const Interrupted&) {
      interrupted = true;
    }
  }
  if (interrupted) throw py::error_already_set();
}

mkv::MatmulPrecision parse_precision(const std::string& p) {
  if (p == "exact") return mkv::MatmulPrecision::Exact;
  if (p == "fast") return mkv::MatmulPrecision::Fast;
  throw py::value_error("precision must be \"exact\" or \"fast\", got \"" + p + "\"");
}

mkv::KvStorage parse_cache_type(const std::string& t) {
  if (const std::optional<mkv::KvStorage> storage = mkv::kv_storage_from_name(t)) return *storage;
  throw py::value_error("cache_type must be \"f32\" or \"f16\", got \"" + t + "\"");
}

// ---- Press specs with budgets, in Python's words -------------------------------------------------
//
// The engine's budget rules (PressConfig), with every message naming the Python arguments
// (kv_budget, compression_ratio) rather than the CLI's flags.

constexpr mkv::BudgetNames kPythonBudget{"kv_budget", "compression_ratio"};

std::optional<mkv::Budget> python_budget(std::optional<int64_t> kv_budget, std::optional<double> compression_ratio) {
  return mkv::PressConfig::budget_from_flags(kv_budget, compression_ratio, kPythonBudget);
}

// Parses `spec` and applies kv_budget / compression_ratio (at most one); with require_budget, a
// compressing press must end up with a budget. ValueError otherwise.
mkv::PressConfig parse_press_spec(const std::string& spec, std::optional<int64_t> kv_budget,
                                  std::optional<double> compression_ratio, bool require_budget) {
  const std::optional<mkv::Budget> budget = python_budget(kv_budget, compression_ratio);
  mkv::PressConfig c = mkv::PressConfig::parse(spec);
  if (budget) {
    if (c.is_full())
      throw py::value_error("press 'full' keeps every token: kv_budget / compression_ratio need a compressing press");
    if (c.budget())
      throw py::value_error("press '" + c.name() + "': the budget is given twice (budget=/ratio= in the spec and "
                            "kv_budget/compression_ratio); give one");
    c = c.with_budget(*budget);
  }
  if (require_budget && !c.is_full() && !c.budget())
    throw py::value_error("press '" + c.name() + "' needs a budget: give kv_budget=L (tokens per KV head) or "
                          "compression_ratio=r, or budget=/ratio= in the spec");
  return c;
}

// ---- Presses written in Python (momentkv.ScorerPress) ------------------------------------------
//
// A Python press is a mkv::ScorerPress around a PyScorer: the engine's selection, sinks/window
// protection, allocation, rounds and NC, with the scores of each (layer, KV head) computed by the
// Python object's score(keys, values, queries, positions, layer, kv_head[, query_positions]).
//
// Threads: the press runs on the thread that runs the generation (the caller of generate with the
// GIL released, or a stream's worker), outside any OpenMP region; PyScorer takes the GIL for
// reset() and score() only. On a stream's worker it checks the stream's Cancellation before every
// call into Python and lets the consumer interrupt a running call (see Streaming above). It holds a borrowed PyObject*: the GenerationJob owns the reference
// and outlives the session. Errors: a Python exception raised by the user's code leaves score()
// as py::error_already_set (a C++ exception holding the Python exception), unwinds the engine
// (the session is local to the call) and is restored by pybind11 when it leaves the binding, so
// generate() raises the very exception; a bad return value raises TypeError / ValueError.
// Copies: keys, values, queries and positions are copied into fresh read-only numpy arrays for
// every call (the cache may store f16/q8 rows, and a view would dangle after retain()).

// The validated configuration of a Python press for one generation.
struct PyPressConfig {
  py::object press;  // the momentkv.ScorerPress instance
  mkv::ScorerPressOptions options;
  mkv::Allocation allocation = mkv::Allocation::Uniform;
  double beta = 20.0, safeguard = 0.2;  // of the pyramid and adaptive allocations
  bool nc = false;                      // wrapped in NcPress
  int window = mkv::Protection::kAutoWindow;  // >= 1, or kAutoWindow (tied to the layer's budget)
  bool query_positions = false;                // score() takes a query_positions keyword
};

// Set on a thread while it runs a Python press's reset() or score(): the computation holds
// g_compute, so a model call from there would wait for itself (RuntimeError instead).
thread_local bool t_in_python_press = false;

void check_not_in_press() {
  if (t_in_python_press)
    throw std::runtime_error("momentkv: a Python press's score() or reset() cannot use a model (the computation "
                             "that called it is still running)");
}

// Brackets calls into a Python press (GIL held): no model call from there, and a cancelled
// stream (`cancellation`, null outside a stream) can interrupt them.
class InPythonPress {
 public:
  explicit InPythonPress(Cancellation* cancellation) : cancellation_(cancellation) {
    if (cancellation_) {
      cancellation_->check();
      cancellation_->enter_python();
    }
    t_in_python_press = true;
  }
  ~InPythonPress() {
    t_in_python_press = false;
    if (cancellation_) cancellation_->leave_python();
  }
  InPythonPress(const InPythonPress&) = delete;
  InPythonPress& operator=(const InPythonPress&) = delete;

 private:
  Cancellation* cancellation_;
};

class PyScorer : public mkv::Scorer {
 public:
  PyScorer(PyObject* press, int window, bool query_positions, Cancellation* cancellation)
      : press_(press), window_(window), query_positions_(query_positions), cancellation_(cancellation) {}

  void reset(const mkv::PressGeometry& geometry) override {
    Scorer::reset(geometry);
    observed_.reset(geometry.n_layers, mkv::window_capacity(window_), std::size_t(geometry.n_heads) * geometry.head_dim_k);
    GilAcquire gil;
    py::dict g;
    g["n_layers"] = geometry.n_layers;
    g["n_heads"] = geometry.n_heads;
    g["n_kv_heads"] = geometry.n_kv_heads;
    g["head_dim_k"] = geometry.head_dim_k;
    g["head_dim_v"] = geometry.head_dim_v;
    g["group_size"] = geometry.group_size();
    g["scale"] = geometry.scale;
    InPythonPress in_press(cancellation_);
    parking_at_exit([&] { py::handle(press_).attr("reset")(g); });
  }

  // The budget of the layer about to be scored: the press reads it as self.layer_budget.
  void set_layer_budget(int32_t budget) override { layer_budget_ = budget; }

  // The last `window` observed queries per layer, kept as SnapKVScorer keeps them.
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions, const mkv::KvCache&) override {
    observed_.observe(layer, n_tokens, q, positions);
  }

  void score(const mkv::KvCache& cache, int layer, mkv::HeadScores& scores) override {
    const mkv::PressGeometry& g = geometry_;
    const mkv::ObservationWindow::Queries window = observed_.last(layer, mkv::resolve_window(window_, layer_budget_));
    const int n_obs = window.count;
    const int group = g.group_size(), dk = g.head_dim_k, dv = g.head_dim_v;
    const float* obs_q = window.q;
    scores.resize(g.n_kv_heads);

    GilAcquire gil;
    InPythonPress in_press(cancellation_);
    const py::handle press(press_);
    press.attr("layer_budget") = layer_budget_;
    const py::object fn = press.attr("score");
    py::array_t<int32_t> qpos(n_obs);
    std::copy_n(window.positions, n_obs, qpos.mutable_data());
    read_only(qpos);
    for (int kv = 0; kv < g.n_kv_heads; ++kv) {
      const mkv::KvHeadView view = cache.head(layer, kv);
      const py::ssize_t n = view.length;
      py::array_t<float> keys({n, py::ssize_t(dk)}), values({n, py::ssize_t(dv)});
      if (n > 0) {
        const mkv::HeadRows k = mkv::HeadRows::keys(view), v = mkv::HeadRows::values(view);
        std::memcpy(keys.mutable_data(), k.data(), sizeof(float) * n * dk);
        std::memcpy(values.mutable_data(), v.data(), sizeof(float) * n * dv);
      }
      py::array_t<float> queries({py::ssize_t(n_obs), py::ssize_t(group), py::ssize_t(dk)});
      float* qd = queries.mutable_data();
      for (int t = 0; t < n_obs; ++t)
        std::memcpy(qd + std::size_t(t) * group * dk, obs_q + (std::size_t(t) * g.n_heads + std::size_t(kv) * group) * dk,
                    sizeof(float) * group * dk);
      py::array_t<int32_t> positions(n);
      std::copy_n(view.positions, n, positions.mutable_data());
      read_only(keys);
      read_only(values);
      read_only(queries);
      read_only(positions);
      if (cancellation_) cancellation_->check();
      const py::object result = parking_at_exit([&] {
        return query_positions_ ? fn(keys, values, queries, positions, layer, kv, py::arg("query_positions") = qpos)
                                : fn(keys, values, queries, positions, layer, kv);
      });
      fill(result, n, layer, kv, scores[kv]);
    }
  }

 private:
  static void read_only(py::array& a) { a.attr("setflags")(py::arg("write") = false); }

  std::string where(int layer, int kv) const {
    return std::string(py::str(py::type::handle_of(py::handle(press_)).attr("__qualname__"))) + ".score(layer=" +
           std::to_string(layer) + ", kv_head=" + std::to_string(kv) + ")";
  }

  // Checks score()'s return value and copies it into out (float32).
  void fill(const py::object& result, py::ssize_t n, int layer, int kv, std::vector<float>& out) const {
    if (!py::isinstance<py::array>(result))
      throw py::type_error(where(layer, kv) + " must return a numpy array of shape (" + std::to_string(n) +
                           ",), got " + std::string(py::str(py::type::handle_of(result).attr("__name__"))));
    const py::array a = py::reinterpret_borrow<py::array>(result);
    const char kind = a.dtype().kind();
    if (kind != 'f' && kind != 'i' && kind != 'u')
      throw py::type_error(where(layer, kv) + " must return real numbers (a float or int array), got dtype " +
                           std::string(py::str(a.dtype())));
    if (a.ndim() != 1 || a.shape(0) != n) {
      std::string shape = "(";
      for (py::ssize_t i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape(i));
      shape += a.ndim() == 1 ? ",)" : ")";
      throw py::value_error(where(layer, kv) + " returned an array of shape " + shape + ", expected (" +
                            std::to_string(n) + ",): one score per cached row");
    }
    const auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    if (!f) throw py::error_already_set();
    const float* d = f.data();
    out.assign(d, d + n);
    for (py::ssize_t i = 0; i < n; ++i)
      if (std::isnan(out[i]) || out[i] == std::numeric_limits<float>::infinity())
        throw py::value_error(where(layer, kv) + " returned " + (std::isnan(out[i]) ? "NaN" : "+inf") +
                              " at row " + std::to_string(i) + " (scores must be finite, or -inf)");
  }

  PyObject* press_;  // borrowed: the GenerationJob holds the reference
  int window_;
  bool query_positions_;
  Cancellation* cancellation_;  // the stream's, or null
  int32_t layer_budget_ = 0;  // set before every score()
  mkv::ObservationWindow observed_;
};

// The range the press-spec parser allows for the numeric parameter `key`, which Python presses'
// options of the same name share.
mkv::ParamRange spec_range(const char* key) {
  const std::optional<mkv::ParamRange> r = mkv::param_range(key);
  if (!r) throw std::logic_error(std::string("momentkv: no numeric press parameter named ") + key);
  return *r;
}

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return std::string(py::str(py::float_(v)));
}

// "key=<value> must be in [min, max]<also>", for a ValueError.
std::string out_of_range(const char* key, const py::handle& value, const mkv::ParamRange& r, const char* also = "") {
  return std::string(key) + "=" + std::string(py::repr(value)) + " must be in [" + number_text(r.min) + ", " +
         number_text(r.max) + "]" + also;
}

// A Python int (any size) in the spec parser's range for `key`; ValueError from `bad` otherwise.
template <class Bad>
int64_t integer_in_range(const py::handle& value, const char* key, const Bad& bad, const char* also = "") {
  const mkv::ParamRange r = spec_range(key);
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || v < r.min || v > r.max) throw bad(out_of_range(key, value, r, also));
  return v;
}

template <class Bad>
double real_in_range(const py::handle& value, const char* key, const Bad& bad) {
  const mkv::ParamRange r = spec_range(key);
  const double v = value.cast<double>();
  if (!(v >= r.min && v <= r.max)) throw bad(out_of_range(key, value, r));
  return v;
}

// Reads and validates a Python press's options (their types were checked by momentkv.ScorerPress,
// which gives ints as Python ints); the numeric ones in the ranges a press spec allows.
PyPressConfig py_press_config(const py::object& press, std::optional<int64_t> kv_budget,
                              std::optional<double> compression_ratio) {
  const py::dict o = press.attr("_engine_options")().cast<py::dict>();
  const std::string name = py::str(py::type::handle_of(press).attr("__qualname__"));
  auto bad = [&](const std::string& what) { return py::value_error("press " + name + ": " + what); };
  PyPressConfig c;
  c.press = press;
  if (py::isinstance<py::str>(o["window"])) {
    const std::string window = utf8_text(o["window"], "press " + name + ": window");
    if (window != "auto") throw bad("window=\"" + window + "\" is not an integer >= 1 or \"auto\"");
    c.window = mkv::Protection::kAutoWindow;
  } else {
    c.window = int(integer_in_range(o["window"], "window", bad, " or \"auto\""));
  }
  mkv::ScorerPressOptions& s = c.options;
  s.protection.window = c.window;
  s.protection.sinks = int(integer_in_range(o["sinks"], "sinks", bad));
  c.nc = o["nc"].cast<bool>();
  const std::string alloc = utf8_text(o["alloc"], "press " + name + ": alloc");
  const std::optional<mkv::Allocation> allocation = mkv::allocation_from_name(alloc);
  if (!allocation) throw bad("alloc=\"" + alloc + "\" is not one of uniform, adaptive, pyramid, pyramid_adaptive, global");
  c.allocation = *allocation;
  c.safeguard = real_in_range(o["safeguard"], "safeguard", bad);
  c.beta = real_in_range(o["beta"], "beta", bad);
  s.rounds = int(integer_in_range(o["rounds"], "rounds", bad));
  s.decode_slack = int(integer_in_range(o["decode_slack"], "decode_slack", bad, " (-1: no decode-time eviction)"));
  // The budget: exactly one of the press's budget/ratio and generate's kv_budget/compression_ratio,
  // with the CLI's rules (MkvError -> ValueError).
  std::optional<int64_t> own_tokens;
  if (!o["budget"].is_none()) own_tokens = integer_in_range(o["budget"], "budget", bad);
  const auto own = mkv::PressConfig::budget_from_flags(own_tokens, o["ratio"].cast<std::optional<double>>(),
                                                       {"budget", "ratio"});
  const auto flags = python_budget(kv_budget, compression_ratio);
  if (own && flags) throw bad("a budget is given twice (in the press and by kv_budget/compression_ratio)");
  if (!own && !flags) throw bad("needs a budget: kv_budget=L or compression_ratio=r (or budget=/ratio= in the press)");
  s.budget = own ? *own : *flags;
  c.query_positions = o["query_positions"].cast<bool>();
  return c;
}

struct Model;

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

  // A press spec string or a momentkv.ScorerPress (the Python side checked the type), validated
  // with generate's budget rules; exactly one of `config` and `py` is used afterwards.
  static void resolve_press(const py::object& press, std::optional<int64_t> kv_budget,
                            std::optional<double> compression_ratio, mkv::PressConfig& config,
                            std::optional<PyPressConfig>& py) {
    if (py::isinstance<py::str>(press)) {
      config = parse_press_spec(utf8_text(press, "press"), kv_budget, compression_ratio, /*require_budget=*/true);
    } else {
      py = py_press_config(press, kv_budget, compression_ratio);
    }
  }

  // The engine press for a resolved press (nullptr for the full cache). A Python press's PyScorer
  // borrows py->press (the caller keeps `py` alive as long as the press) and `cancellation` (a
  // stream's, or null).
  static std::unique_ptr<mkv::Press> make_press(const mkv::PressConfig& config, const std::optional<PyPressConfig>& py,
                                                Cancellation* cancellation = nullptr) {
    if (!py) return config.make_or_null();
    std::unique_ptr<mkv::Press> p = std::make_unique<mkv::ScorerPress>(
        std::make_unique<PyScorer>(py->press.ptr(), py->window, py->query_positions, cancellation),
        mkv::make_allocation(py->allocation, py->beta, py->safeguard), py->options);
    if (py->nc) p = std::make_unique<mkv::NcPress>(std::move(p));
    return p;
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

// ---- Sessions: one sequence kept between calls, with its cache visible ---------------------------
//
// A PySession owns an mkv::Session (and its press). prefill/decode/evaluate/reset run like
// Model.logits: GIL released, g_compute held, signals polled. A call that fails or is interrupted
// once the computation has started leaves the session reset (empty): a half-fed chunk or a
// half-done compression is not a state worth keeping. Errors found before (ids out of range, the
// context full) change nothing.
//
// Cache views. HeadView.keys / .values / .positions are numpy arrays over the cache's own rows
// (no copy; float32 storage, the only one Model uses — other storage would be decoded into a
// copy), read-only, whose base object is a CacheExport. A CacheExport holds a reference to the
// session (so the session and its cache outlive every view) and counts itself in `exports`; numpy
// views derived from a view (slices, transposes) keep that base alive too. The engine reallocates
// a head's rows whenever it appends or evicts, so a view would dangle after the next prefill/
// decode/evaluate: instead, like a bytearray under a memoryview, a session refuses to change its
// cache while any view is alive (BufferError naming the count; `del` the views, or keep copies).
// A view therefore never dangles and never silently goes stale. HeadView itself is only a
// (session, layer, kv_head) handle: each property reads the cache as it is at that moment.
// While a session computes (another thread, or a Python press's score() on this session) its
// cache cannot be read and it cannot be called: RuntimeError.
//
// compress(press) runs another press's compression step on the cache as it stands (the step a
// session with that press runs after its prefill): the session records the last query_window
// queries of every layer (QueryRecorder, compress_later.h) and replays them into the new press
// first, and copies a cache that has evicted nothing into one tracking that press's moments.
// reset() brings the cache back to the session's own press's moments and NC.
struct PySession {
  py::object model_ref;  // keeps the Model (transformer, tokenizer) alive
  Model& model;
  mkv::PressConfig press_config;
  std::optional<PyPressConfig> py_press;  // owns the Python press the PyScorer borrows
  std::unique_ptr<mkv::Press> press;
  std::unique_ptr<mkv::Session> session;
  mkv::QueryRecorder queries;  // the last query_window queries of every layer
  int64_t exports = 0;  // live CacheExports (numpy views of the cache); changed with the GIL held
  bool busy = false;    // a computation is running on this session (the GIL is released then)

  PySession(py::object model_obj, const py::object& press_obj, std::optional<int64_t> kv_budget,
            std::optional<double> compression_ratio, int ctx, int query_window)
      : model_ref(std::move(model_obj)), model(model_ref.cast<Model&>()) {
    check_not_in_press();
    if (ctx < 0) throw py::value_error("ctx must be >= 0 (0: the model's context)");
    if (query_window < 1)
      throw py::value_error("query_window must be >= 1 (the last queries per layer kept for compress()), got " +
                            std::to_string(query_window));
    if (ctx > model.n_ctx())
      throw py::value_error("ctx=" + std::to_string(ctx) + " is above the model's context of " +
                            std::to_string(model.n_ctx()));
    Model::resolve_press(press_obj, kv_budget, compression_ratio, press_config, py_press);
    press = Model::make_press(press_config, py_press);
    mkv::SessionOptions so = model.session_options(press.get());
    so.n_ctx = ctx > 0 ? ctx : model.n_ctx();
    session = std::make_unique<mkv::Session>(*model.transformer, so);  // a Python press's reset() runs here
    queries.reset(model.transformer->config(), query_window);
  }

  // Empties the session and brings its cache back to its own press's moments and NC (after a
  // compress() with another press). Called with the GIL released, or while constructing.
  void reset_engine() {
    const mkv::MomentConfig own = press ? press->moment_config() : mkv::MomentConfig{};
    if (!mkv::same_moments(session->cache().moment_config(), own))
      session->cache() = mkv::KvCache(session->cache().shape(), session->cache().storage(), own);
    session->reset();
    session->set_nc(press && press->nc());
    queries.reset(model.transformer->config(), queries.window());
  }

  void check_readable() const {
    if (busy) throw std::runtime_error("momentkv.Session: the session is computing (its cache cannot be read now)");
  }

  // Validates that the session may change now (GIL held) and that n more positions fit.
  void check_mutable(int64_t n_new, const char* what) const {
    check_not_in_press();
    if (busy) throw std::runtime_error("momentkv.Session: the session is already computing (one call at a time)");
    if (exports > 0) {
      const std::string msg = std::string("Session.") + what + ": " + std::to_string(exports) +
                              " numpy view(s) of this session's cache are still alive; the engine would reallocate "
                              "the rows under them. Delete them (del) or keep copies (.copy()) first.";
      PyErr_SetString(PyExc_BufferError, msg.c_str());
      throw py::error_already_set();
    }
    if (session->n_past() + n_new > session->n_ctx())
      throw py::value_error(std::string("Session.") + what + ": " + std::to_string(session->n_past()) +
                            " positions held + " + std::to_string(n_new) + " new > the context of " +
                            std::to_string(session->n_ctx()) + " (raise ctx)");
  }

  // Changes the session's cache: checks that it may (check_mutable), then runs f with the GIL
  // released and g_compute held (see the block comment). Nothing runs Python code between the
  // check and marking the session busy, and busy covers the whole change: no view of the cache
  // can be taken in between (head() refuses while busy), so none can outlive the change. Callers
  // run every Python code of theirs (a press's options) before.
  template <class F>
  void mutate(int64_t n_new, const char* what, F&& f) {
    check_mutable(n_new, what);
    Busy mark(busy);
    compute_polling_signals([&](Poller& poller) { run_resetting_on_error(poller, f); });
  }

  struct Busy {
    explicit Busy(bool& flag) : flag(flag) { flag = true; }
    ~Busy() { flag = false; }
    bool& flag;
  };

  template <class F>
  void run_resetting_on_error(Poller& poller, F& f) {
    try {
      model.apply_settings();
      queries.set_next(&poller);
      session->set_observer(&queries);
      f();
      session->set_observer(nullptr);
    } catch (...) {
      session->set_observer(nullptr);
      try {
        reset_engine();
      } catch (abi::__forced_unwind&) {
        throw;
      } catch (...) {  // the first error is the one to report
      }
      throw;
    }
  }

  py::array_t<float> last_logits(std::span<const float> l) const {
    py::array_t<float> out(static_cast<py::ssize_t>(l.size()));
    std::copy(l.begin(), l.end(), out.mutable_data());
    return out;
  }

  py::array_t<float> prefill(const std::vector<int64_t>& id_list) {
    const std::vector<int32_t> ids = model.checked_ids(id_list);
    if (ids.empty()) throw py::value_error("Session.prefill: no token ids given");
    std::span<const float> l;
    mutate(static_cast<int64_t>(ids.size()), "prefill", [&] { l = session->prefill(ids); });
    return last_logits(l);
  }

  py::array_t<float> decode(int64_t token) {
    const std::vector<int32_t> ids = model.checked_ids({token});
    std::span<const float> l;
    mutate(1, "decode", [&] { l = session->decode(ids[0]); });
    return last_logits(l);
  }

  py::array_t<float> evaluate(const std::vector<int64_t>& id_list) {
    const std::vector<int32_t> ids = model.checked_ids(id_list);
    if (ids.empty()) throw py::value_error("Session.evaluate: no token ids given");
    py::array_t<float> out({static_cast<py::ssize_t>(ids.size()), static_cast<py::ssize_t>(model.n_vocab())});
    float* data = out.mutable_data();
    mutate(static_cast<int64_t>(ids.size()), "evaluate", [&] { session->evaluate(ids, data); });
    return out;
  }

  void reset() {
    mutate(0, "reset", [&] { reset_engine(); });
  }

  // Compresses the cache now with `press_obj` (a spec or a momentkv.ScorerPress) and its budget;
  // see the block comment above. Errors found before the computation change nothing.
  void compress(const py::object& press_obj, std::optional<int64_t> kv_budget, std::optional<double> compression_ratio) {
    check_not_in_press();
    mkv::PressConfig config;
    std::optional<PyPressConfig> py;
    Model::resolve_press(press_obj, kv_budget, compression_ratio, config, py);  // may run Python code
    const std::string name = py ? std::string(py::str(py::type::handle_of(press_obj).attr("__qualname__")))
                                : config.as_given();
    check_mutable(0, "compress");  // before reading the session (mutate checks again, at the change)
    if (session->n_past() == 0)
      throw py::value_error("Session.compress: the session holds no tokens (prefill some first)");
    if (!py && config.is_full()) return;  // keeps every token
    const auto n_past = int32_t(session->n_past());
    const int read = !py ? config.queries_read(n_past)
                         : mkv::window_read(py->window, py->options.budget, n_past, mkv::has_pyramid_layers(py->allocation));
    if (read < 0)
      throw py::value_error("Session.compress: press '" + name + "' scores with every query of the sequence, which a "
                            "session does not keep; create the session with this press to use it");
    if (read > queries.window() && session->n_past() > queries.window())
      throw py::value_error("Session.compress: press '" + name + "' observes the last " + std::to_string(read) +
                            " queries, this session keeps the last " + std::to_string(queries.window()) +
                            " (create it with query_window=" + std::to_string(read) + ")");
    std::unique_ptr<mkv::Press> p = Model::make_press(config, py);
    const mkv::MomentConfig wanted = p->moment_config();
    const mkv::MomentConfig& held = session->cache().moment_config();
    const bool copy = !mkv::same_moments(held, wanted);
    if (copy && !mkv::evicted_nothing(session->cache(), session->n_past()))
      throw py::value_error("Session.compress: press '" + name + "' needs a cache that tracks " +
                            mkv::describe_moments(wanted) + "; this one tracks " +
                            mkv::describe_moments(held) + " and has already evicted tokens: compress it "
                            "with a press that tracks the same, or reset() and prefill again");
    const mkv::PressGeometry geometry = model.transformer->config().press_geometry();
    mutate(0, "compress", [&] {
      if (copy) session->cache() = mkv::with_moments(session->cache(), wanted);
      p->reset(geometry);  // a Python press's reset() runs here
      queries.replay(*p, session->cache());
      session->compress_with(*p);
    });
  }
};

// The base object of every numpy view of a session's cache (see PySession).
class CacheExport {
 public:
  explicit CacheExport(py::object session_obj) : session_obj_(std::move(session_obj)) {
    ++session_obj_.cast<PySession&>().exports;
  }
  ~CacheExport() { --session_obj_.cast<PySession&>().exports; }  // destroyed with the GIL held
  CacheExport(const CacheExport&) = delete;
  CacheExport& operator=(const CacheExport&) = delete;

 private:
  py::object session_obj_;
};

// A read-only numpy array (n, dim) over `data` (or an empty/decoded copy), based on a CacheExport.
template <class T>
py::array cache_array(const py::object& session_obj, const T* data, std::vector<py::ssize_t> shape) {
  py::array a;
  py::ssize_t count = 1;
  for (const py::ssize_t s : shape) count *= s;
  if (count == 0 || data == nullptr) {
    a = py::array_t<T>(shape);  // nothing to share
  } else {
    py::object base = py::cast(std::make_unique<CacheExport>(session_obj));
    a = py::array(py::dtype::of<T>(), shape, {}, data, base);
  }
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

struct PyHeadView {
  py::object session_obj;
  int layer, kv_head;

  PySession& s() const {
    PySession& ps = session_obj.cast<PySession&>();
    ps.check_readable();
    return ps;
  }
  mkv::KvHeadView view() const { return s().session->cache().head(layer, kv_head); }

  int32_t length() const { return view().length; }

  py::array positions() const {
    const mkv::KvHeadView v = view();
    return cache_array<int32_t>(session_obj, v.positions, {v.length});
  }

  py::array rows(bool keys) const {
    const mkv::KvHeadView v = view();
    const int dim = keys ? v.head_dim_k : v.head_dim_v;
    if (v.storage == mkv::KvStorage::F32)
      return cache_array<float>(session_obj, static_cast<const float*>(keys ? v.keys : v.values), {v.length, dim});
    // Other storage: a decoded copy (not a view of the cache).
    py::array_t<float> out({py::ssize_t(v.length), py::ssize_t(dim)});
    if (v.length > 0) {
      const mkv::HeadRows r = keys ? mkv::HeadRows::keys(v) : mkv::HeadRows::values(v);
      std::memcpy(out.mutable_data(), r.data(), sizeof(float) * std::size_t(v.length) * dim);
    }
    out.attr("setflags")(py::arg("write") = false);
    return out;
  }

  // None when the press tracks no moments; else a dict of copies (see Session's docstring).
  py::object moments() const {
    const mkv::KvHeadView v = view();
    if (!v.moments || !s().session->cache().tracks_moments()) return py::none();
    const mkv::MomentGroups& m = *v.moments;
    const auto& groups = m.groups();
    const py::ssize_t g = static_cast<py::ssize_t>(groups.size());
    py::array_t<int64_t> counts(g);
    py::array_t<double> kmean({g, py::ssize_t(v.head_dim_k)}), vmean({g, py::ssize_t(v.head_dim_v)});
    double* kd = kmean.mutable_data();
    double* vd = vmean.mutable_data();
    for (py::ssize_t i = 0; i < g; ++i) {
      const mkv::MomentStats& st = groups[i];
      counts.mutable_data()[i] = st.count();
      const bool ok = st.count() > 0 && st.key_mean().size() == std::size_t(v.head_dim_k) &&
                      st.value_mean().size() == std::size_t(v.head_dim_v);
      for (int j = 0; j < v.head_dim_k; ++j)
        kd[i * v.head_dim_k + j] = ok ? st.key_mean()[j] : std::numeric_limits<double>::quiet_NaN();
      for (int j = 0; j < v.head_dim_v; ++j)
        vd[i * v.head_dim_v + j] = ok ? st.value_mean()[j] : std::numeric_limits<double>::quiet_NaN();
    }
    py::dict d;
    d["count"] = m.count();
    d["groups"] = g;
    d["comoment"] = m.config().comoment;
    d["counts"] = counts;
    d["key_means"] = kmean;
    d["value_means"] = vmean;
    return d;
  }
};

struct PyCache {
  py::object session_obj;
  const mkv::KvCache& cache() const {
    PySession& ps = session_obj.cast<PySession&>();
    ps.check_readable();
    return ps.session->cache();
  }
  PyHeadView head(int layer, int kv_head) const {
    const mkv::KvCacheShape& sh = cache().shape();
    if (layer < 0 || layer >= sh.n_layers)
      throw py::index_error("layer " + std::to_string(layer) + " is out of range [0, " + std::to_string(sh.n_layers) + ")");
    if (kv_head < 0 || kv_head >= sh.n_kv_heads)
      throw py::index_error("kv_head " + std::to_string(kv_head) + " is out of range [0, " +
                            std::to_string(sh.n_kv_heads) + ")");
    return PyHeadView{session_obj, layer, kv_head};
  }
};

// A layer budget (tokens per KV head) for pooling_kernel / observation_window, in a budget's range.
int32_t layer_budget(const py::int_& budget) {
  return int32_t(integer_in_range(budget, "budget", [](const std::string& what) { return py::value_error(what); }));
}

py::list press_catalog() {
  py::list out;
  for (const mkv::PressDef& p : mkv::press_catalog()) {
    py::list params;
    for (const mkv::PressParam& q : p.params) {
      py::dict d;
      d["key"] = q.key;
      d["default"] = q.fallback;
      d["help"] = q.help;
      params.append(d);
    }
    py::dict d;
    d["name"] = p.name;
    d["summary"] = p.summary;
    d["params"] = params;
    out.append(d);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_momentkv, m) {
  m.doc() = "momentkv's C++ engine (use the package momentkv, not this module directly)";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const mkv::MkvError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("_mark_interpreter_exit", &mark_interpreter_exit,
        "Called by momentkv's atexit handler once its streams are closed: threads still computing park "
        "instead of taking the GIL while Python finalizes.");
  m.def(
      "parse_press",
      [](const std::string& spec, std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
         bool require_budget) {
        const mkv::PressConfig c = parse_press_spec(spec, kv_budget, compression_ratio, require_budget);
        return py::make_tuple(c.name(), c.spec(), c.as_given());
      },
      py::arg("spec"), py::arg("kv_budget") = py::none(), py::arg("compression_ratio") = py::none(),
      py::arg("require_budget") = false,
      "Validates a press spec like --press (with kv_budget/compression_ratio as --kv-budget/--compression-ratio); "
      "returns (name, canonical spec, spec as given). ValueError with the engine's message when it is invalid.");
  m.def("pooling_kernel", [](const py::int_& budget) { return mkv::pooling_kernel(layer_budget(budget)); },
        py::arg("budget"),
        "The max-pool kernel that kernel=auto gives a layer budget of `budget` tokens per KV head "
        "(L/3 made odd, in [7, 31]).");
  m.def("observation_window", [](const py::int_& budget) { return mkv::observation_window(layer_budget(budget)); },
        py::arg("budget"),
        "The observation window that window=auto gives a layer budget of `budget` tokens per KV head "
        "(L/64 in [1, 32]): the queries a window-based press scores with and the recent rows it keeps.");
  m.def("press_catalog", &press_catalog, "Every press with its parameters and defaults (momentkv presses).");

  py::class_<TextStream>(m, "TextStream")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &TextStream::next)
      .def("close", &TextStream::close);

  py::class_<CacheExport>(m, "CacheExport", "The base object of a numpy view of a session's cache.");

  py::class_<PyHeadView>(m, "HeadView")
      .def_readonly("layer", &PyHeadView::layer)
      .def_readonly("kv_head", &PyHeadView::kv_head)
      .def_property_readonly("length", &PyHeadView::length)
      .def("__len__", &PyHeadView::length)
      .def_property_readonly("positions", &PyHeadView::positions)
      .def_property_readonly("keys", [](const PyHeadView& h) { return h.rows(true); })
      .def_property_readonly("values", [](const PyHeadView& h) { return h.rows(false); })
      .def_property_readonly("moments", &PyHeadView::moments);

  py::class_<PyCache>(m, "Cache")
      .def_property_readonly("n_layers", [](const PyCache& c) { return c.cache().shape().n_layers; })
      .def_property_readonly("n_kv_heads", [](const PyCache& c) { return c.cache().shape().n_kv_heads; })
      .def_property_readonly("head_dim_k", [](const PyCache& c) { return c.cache().shape().head_dim_k; })
      .def_property_readonly("head_dim_v", [](const PyCache& c) { return c.cache().shape().head_dim_v; })
      .def_property_readonly("bytes_held", [](const PyCache& c) { return c.cache().bytes_held(); })
      .def_property_readonly("moment_bytes", [](const PyCache& c) { return c.cache().moment_bytes(); })
      .def_property_readonly("row_bytes", [](const PyCache& c) { return c.cache().row_bytes(); })
      .def_property_readonly("total_rows", [](const PyCache& c) { return c.cache().total_tokens(); })
      .def_property_readonly("tracks_moments", [](const PyCache& c) { return c.cache().tracks_moments(); })
      .def_property_readonly("live_views", [](const PyCache& c) { return c.session_obj.cast<PySession&>().exports; })
      .def("head", &PyCache::head, py::arg("layer"), py::arg("kv_head"));

  py::class_<PySession>(m, "Session")
      .def(py::init<py::object, const py::object&, std::optional<int64_t>, std::optional<double>, int, int>(),
           py::arg("model"), py::arg("press"), py::arg("kv_budget"), py::arg("compression_ratio"), py::arg("ctx"),
           py::arg("query_window"))
      .def("prefill", &PySession::prefill, py::arg("ids"))
      .def("decode", &PySession::decode, py::arg("token"))
      .def("evaluate", &PySession::evaluate, py::arg("ids"))
      .def("reset", &PySession::reset)
      .def("compress", &PySession::compress, py::arg("press"), py::arg("kv_budget"), py::arg("compression_ratio"))
      .def_property_readonly("compress_seconds", [](const PySession& s) { return s.session->compress_seconds(); })
      .def_property_readonly("query_window", [](const PySession& s) { return s.queries.window(); })
      .def_property_readonly("n_past", [](const PySession& s) { return s.session->n_past(); })
      .def_property_readonly("n_ctx", [](const PySession& s) { return s.session->n_ctx(); })
      .def_property_readonly("cache", [](py::object self) { return PyCache{self}; });

  py::class_<Model>(m, "Model")
      .def(py::init<const std::string&, std::optional<int>, int, const std::string&, const std::string&>(),
           py::arg("path"), py::arg("threads") = py::none(), py::arg("ctx") = 0, py::arg("precision") = "exact",
           py::arg("cache_type") = "f32")
      .def_property_readonly("cache_type",
                             [](const Model& m) { return mkv::kv_storage_name(m.kv_storage); })
      .def_property_readonly("n_vocab", &Model::n_vocab)
      .def_property_readonly("n_ctx", &Model::n_ctx)
      .def_readonly("path", &Model::path)
      .def_property_readonly("bos", [](const Model& m) { return m.tokenizer->vocab().bos; })
      .def_property_readonly("eos", [](const Model& m) { return m.tokenizer->vocab().eos; })
      .def("tokenize", &Model::tokenize, py::arg("text"), py::arg("add_bos") = true, py::arg("parse_special") = true)
      .def("detokenize", &Model::detokenize, py::arg("ids"), py::arg("render_special") = false)
      .def("logits", &Model::logits, py::arg("ids"))
      .def("chat_ids", &Model::chat_ids, py::arg("messages"), py::arg("chat_template") = "")
      .def(
          "generate",
          [](py::object self, py::object prompt, int max_tokens, float temperature, float top_p,
             int top_k, float min_p, std::optional<int64_t> seed, py::object press,
             std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
             const std::vector<py::str>& stop, bool ignore_eos, bool stream) -> py::object {
            Model& model = self.cast<Model&>();
            check_not_in_press();
            std::vector<std::string> stop_texts;
            for (const py::str& s : stop) stop_texts.push_back(utf8_text(s, "a stop string"));
            GenerationJob j = model.job(model.prompt_ids(prompt), max_tokens, temperature, top_p, top_k, min_p, seed, press, kv_budget,
                                        compression_ratio, std::move(stop_texts), ignore_eos);
            if (!stream) return model.generate_blocking(j);
            return py::cast(std::make_unique<TextStream>(self, model, std::move(j)));
          },
          py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_p"), py::arg("top_k"),
          py::arg("min_p"), py::arg("seed"), py::arg("press"), py::arg("kv_budget"), py::arg("compression_ratio"),
          py::arg("stop"), py::arg("ignore_eos"), py::arg("stream"));
}
