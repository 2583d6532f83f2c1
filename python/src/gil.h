// Threads, the GIL, Ctrl-C and interpreter exit for momentkv._momentkv (python/src/module.cpp
// binds; this header holds what every computing call shares).
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
//
// Interpreter exit. Once Python is finalizing, CPython (before 3.14) force-unwinds a thread that
// takes the GIL (pthread_exit: abi::__forced_unwind). Our frames cannot be unwound that way: a
// catch (...) would swallow it (abort: "exception not rethrown"), and destructors would take the
// GIL again (std::terminate) or release one the thread does not hold. So every place here that
// takes the GIL on a computing thread parks that thread until the process exits instead (as
// CPython 3.14 does itself), and catch (...) blocks rethrow a forced unwind. Once momentkv's atexit
// handler has closed the streams it marks the exit, and from then on a thread that released the
// GIL to compute parks before taking it again: finalization may have finished by then, and taking
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every translation unit: the same casters for std::optional and vectors everywhere

#include <Python.h>
#include <cxxabi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "kv/kv_cache.h"
#include "model/transformer.h"

namespace momentkv_python {

namespace py = pybind11;

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(50);

inline std::timed_mutex g_compute;  // one computation at a time in the process (see the header comment)

// Thrown by a poll that found a pending Python error (KeyboardInterrupt); the error stays set in
// the thread state until the binding rethrows it as py::error_already_set with the GIL held.
struct Interrupted {};
// Thrown inside a streaming worker when the consumer cancelled.
struct Cancelled {};

// ---- Taking the GIL on a computing thread (see "Interpreter exit" above) -------------------------

[[noreturn]] inline void park_until_exit() {
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Set by _mark_interpreter_exit (momentkv's atexit handler, on the thread that then finalizes
// Python). From then on a computing thread parks before taking the GIL: once Py_FinalizeEx has
// finished, the runtime's locks are freed (CPython 3.11), and taking the GIL (PyThreadState_New,
// PyEval_RestoreThread) would crash in the process's exit handlers instead of force-unwinding the
// thread. The finalizing thread itself keeps taking the GIL (objects released during finalization).
inline std::atomic<bool> g_interpreter_exiting{false};
inline std::thread::id g_finalizing_thread;  // written once, before g_interpreter_exiting is set

inline void mark_interpreter_exit() {
  g_finalizing_thread = std::this_thread::get_id();
  g_interpreter_exiting.store(true, std::memory_order_release);
}

// Called only where this thread does not hold the GIL (a thread parked with the GIL would stop the
// finalization).
inline void park_if_interpreter_exiting() {
  if (g_interpreter_exiting.load(std::memory_order_acquire) && std::this_thread::get_id() != g_finalizing_thread)
    park_until_exit();
}

// Whether this thread is inside a GilRelease scope of its own and not inside a GilAcquire within it:
// it does not hold the GIL. (Stream workers are joined before the exit mark.)
inline thread_local bool t_gil_released = false;

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

inline void poll_signals_now() {
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

}  // namespace momentkv_python
