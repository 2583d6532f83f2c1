#include "compress_later.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace momentkv_python {
namespace {

// The value of `key` in a canonical spec "name:key=value,key=value" ("" when absent).
std::string spec_value(std::string_view spec, std::string_view key) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return "";
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == key) return std::string(item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return "";
}

}  // namespace

void QueryRecorder::reset(const mkv::ModelConfig& config, int window) {
  MKV_CHECK(window >= 1, "query_window must be >= 1, got {}", window);
  window_ = window;
  n_layers_ = config.n_layers;
  queries_.reset(config.n_layers, window, std::size_t(config.n_heads) * config.head_dim_k);
}

void QueryRecorder::on_queries(int layer, int n_tokens, const float* q, const int32_t* positions,
                               const mkv::KvCache& cache) {
  queries_.observe(layer, n_tokens, q, positions);
  if (next_) next_->on_queries(layer, n_tokens, q, positions, cache);
}

void QueryRecorder::replay(mkv::Press& press, const mkv::KvCache& cache) const {
  for (int layer = 0; layer < n_layers_; ++layer) {
    const mkv::ObservationWindow::Queries q = queries_.last(layer);
    if (q.count > 0) press.observe(layer, q.count, q.q, q.positions, cache);
  }
}

int window_read(int window, const mkv::Budget& budget, int32_t n_past, bool pyramid) {
  if (window != mkv::Protection::kAutoWindow) return window;
  const int64_t most_layer_budget = (pyramid ? 2 : 1) * int64_t(std::max<int32_t>(budget.resolve(n_past), 1));
  return mkv::observation_window(int32_t(std::min<int64_t>(most_layer_budget, INT32_MAX)));
}

int queries_read(const mkv::PressConfig& config, int32_t n_past) {
  if (config.is_full()) return 0;
  const std::string spec = config.spec();
  if (config.name() == "h2o" || spec_value(spec, "scorer") == "h2o") return -1;
  const std::string window = spec_value(spec, "window");
  if (window.empty()) return 0;
  if (window != "auto") return std::stoi(window);
  // Without a budget the press is refused later (make_press); until then, the most auto may read.
  const bool pyramid = config.name() == "pyramidkv" || spec_value(spec, "alloc") == "pyramid" ||
                       spec_value(spec, "alloc") == "pyramid_adaptive";
  return config.budget() ? window_read(mkv::Protection::kAutoWindow, *config.budget(), n_past, pyramid)
                         : mkv::window_capacity(mkv::Protection::kAutoWindow);
}

mkv::PressGeometry press_geometry(const mkv::ModelConfig& c) {
  return {c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim_k, c.head_dim_v, c.attention_scale()};
}

bool same_moments(const mkv::MomentConfig& a, const mkv::MomentConfig& b) {
  if (!a.track || !b.track) return a.track == b.track;
  return a.groups == b.groups && a.comoment == b.comoment && a.clip == b.clip;
}

std::string describe_moments(const mkv::MomentConfig& m) {
  if (!m.track) return "no moments";
  std::string out = "moments in " + std::to_string(m.groups) + (m.groups == 1 ? " group" : " groups");
  out += m.comoment ? ", with co-moments" : ", means only";
  if (m.clip) out += ", clipped";
  return out;
}

bool evicted_nothing(const mkv::KvCache& cache, int32_t n_past) {
  const mkv::KvCacheShape& s = cache.shape();
  return cache.total_tokens() == int64_t(n_past) * s.n_layers * s.n_kv_heads;
}

mkv::KvCache with_moments(const mkv::KvCache& cache, const mkv::MomentConfig& moments) {
  const mkv::KvCacheShape& s = cache.shape();
  const int dk = s.head_dim_k, dv = s.head_dim_v, heads = s.n_kv_heads;
  mkv::KvCache out(s, cache.storage(), moments);
  out.set_nc(cache.nc());
  std::vector<float> keys, values;  // (n, n_kv_heads, d): the layout KvCache::append takes
  for (int layer = 0; layer < s.n_layers; ++layer) {
    const mkv::KvHeadView first = cache.head(layer, 0);
    const int32_t n = first.length;
    if (n == 0) continue;
    keys.resize(std::size_t(n) * heads * dk);
    values.resize(std::size_t(n) * heads * dv);
    for (int h = 0; h < heads; ++h) {
      const mkv::KvHeadView view = cache.head(layer, h);
      MKV_ASSERT(view.length == n && std::memcmp(view.positions, first.positions, sizeof(int32_t) * n) == 0);
      const mkv::HeadRows k = mkv::HeadRows::keys(view), v = mkv::HeadRows::values(view);
      for (int32_t t = 0; t < n; ++t) {
        std::memcpy(&keys[(std::size_t(t) * heads + h) * dk], k.row(t), sizeof(float) * dk);
        std::memcpy(&values[(std::size_t(t) * heads + h) * dv], v.row(t), sizeof(float) * dv);
      }
    }
    out.append(layer, n, keys.data(), values.data(), first.positions);
  }
  return out;
}

}  // namespace momentkv_python
