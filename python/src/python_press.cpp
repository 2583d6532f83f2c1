#include "python_press.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kv/press_catalog.h"
#include "kv/presses/nc_press.h"
#include "kv/presses/observation_window.h"
#include "python_values.h"

namespace momentkv_python {

namespace {

constexpr mkv::BudgetNames kPythonBudget{"kv_budget", "compression_ratio"};

std::optional<mkv::Budget> python_budget(std::optional<int64_t> kv_budget, std::optional<double> compression_ratio) {
  return mkv::PressConfig::budget_from_flags(kv_budget, compression_ratio, kPythonBudget);
}

}  // namespace

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

namespace {

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

}  // namespace

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

void resolve_press(const py::object& press, std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
                   mkv::PressConfig& config, std::optional<PyPressConfig>& py) {
  if (py::isinstance<py::str>(press)) {
    config = parse_press_spec(utf8_text(press, "press"), kv_budget, compression_ratio, /*require_budget=*/true);
  } else {
    py = py_press_config(press, kv_budget, compression_ratio);
  }
}

std::unique_ptr<mkv::Press> make_press(const mkv::PressConfig& config, const std::optional<PyPressConfig>& py,
                                       Cancellation* cancellation) {
  if (!py) return config.make_or_null();
  std::unique_ptr<mkv::Press> p = std::make_unique<mkv::ScorerPress>(
      std::make_unique<PyScorer>(py->press.ptr(), py->window, py->query_positions, cancellation),
      mkv::make_allocation(py->allocation, py->beta, py->safeguard), py->options);
  if (py->nc) p = std::make_unique<mkv::NcPress>(std::move(p));
  return p;
}

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

}  // namespace momentkv_python
