// Sessions of momentkv._momentkv: one sequence kept between calls, its cache visible as numpy
// views, and compression on demand.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every translation unit: the same casters for std::optional and vectors everywhere

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/compress_later.h"
#include "engine/session.h"
#include "gil.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"
#include "model.h"
#include "python_press.h"

namespace momentkv_python {

namespace py = pybind11;

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
    resolve_press(press_obj, kv_budget, compression_ratio, press_config, py_press);
    press = make_press(press_config, py_press);
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
    resolve_press(press_obj, kv_budget, compression_ratio, config, py);  // may run Python code
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
    std::unique_ptr<mkv::Press> p = make_press(config, py);
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

}  // namespace momentkv_python
