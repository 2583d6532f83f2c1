// Presses for momentkv._momentkv: press specs with budgets in Python's words, and presses written
// in Python (momentkv.ScorerPress) run by the engine.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every translation unit: the same casters for std::optional and vectors everywhere

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gil.h"
#include "kv/press_config.h"
#include "kv/presses/allocation.h"
#include "kv/presses/scorer_press.h"

namespace momentkv_python {

namespace py = pybind11;

// ---- Press specs with budgets, in Python's words -------------------------------------------------
//
// The engine's budget rules (PressConfig), with every message naming the Python arguments
// (kv_budget, compression_ratio) rather than the CLI's flags.

// Parses `spec` and applies kv_budget / compression_ratio (at most one); with require_budget, a
// compressing press must end up with a budget. ValueError otherwise.
mkv::PressConfig parse_press_spec(const std::string& spec, std::optional<int64_t> kv_budget,
                                  std::optional<double> compression_ratio, bool require_budget);

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
inline thread_local bool t_in_python_press = false;

inline void check_not_in_press() {
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

// Reads and validates a Python press's options (their types were checked by momentkv.ScorerPress,
// which gives ints as Python ints); the numeric ones in the ranges a press spec allows.
PyPressConfig py_press_config(const py::object& press, std::optional<int64_t> kv_budget,
                              std::optional<double> compression_ratio);

// A press spec string or a momentkv.ScorerPress (the Python side checked the type), validated
// with generate's budget rules; exactly one of `config` and `py` is used afterwards.
void resolve_press(const py::object& press, std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
                   mkv::PressConfig& config, std::optional<PyPressConfig>& py);

// The engine press for a resolved press (nullptr for the full cache). A Python press's PyScorer
// borrows py->press (the caller keeps `py` alive as long as the press) and `cancellation` (a
// stream's, or null).
std::unique_ptr<mkv::Press> make_press(const mkv::PressConfig& config, const std::optional<PyPressConfig>& py,
                                       Cancellation* cancellation = nullptr);

// A layer budget (tokens per KV head) for pooling_kernel / observation_window, in a budget's range.
int32_t layer_budget(const py::int_& budget);

// Every press with its parameters and defaults (momentkv presses), as dicts.
py::list press_catalog();

}  // namespace momentkv_python
