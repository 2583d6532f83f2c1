#include "engine/compress_later.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace mkv {

void QueryRecorder::reset(const ModelConfig& config, int window) {
  MKV_CHECK(window >= 1, "query_window must be >= 1, got {}", window);
  window_ = window;
  n_layers_ = config.n_layers;
  queries_.reset(config.n_layers, window, std::size_t(config.n_heads) * config.head_dim_k);
}

void QueryRecorder::on_queries(int layer, int n_tokens, const float* q, const int32_t* positions,
                               const KvCache& cache) {
  queries_.observe(layer, n_tokens, q, positions);
  if (next_) next_->on_queries(layer, n_tokens, q, positions, cache);
}

void QueryRecorder::replay(Press& press, const KvCache& cache) const {
  for (int layer = 0; layer < n_layers_; ++layer) {
    const ObservationWindow::Queries q = queries_.last(layer);
    if (q.count > 0) press.observe(layer, q.count, q.q, q.positions, cache);
  }
}

bool same_moments(const MomentConfig& a, const MomentConfig& b) {
  if (!a.track || !b.track) return a.track == b.track;
  return a.groups == b.groups && a.comoment == b.comoment && a.clip == b.clip;
}

std::string describe_moments(const MomentConfig& m) {
  if (!m.track) return "no moments";
  std::string out = "moments in " + std::to_string(m.groups) + (m.groups == 1 ? " group" : " groups");
  out += m.comoment ? ", with co-moments" : ", means only";
  if (m.clip) out += ", clipped";
  return out;
}

bool evicted_nothing(const KvCache& cache, int32_t n_past) {
  const KvCacheShape& s = cache.shape();
  return cache.total_tokens() == int64_t(n_past) * s.n_layers * s.n_kv_heads;
}

KvCache with_moments(const KvCache& cache, const MomentConfig& moments) {
  const KvCacheShape& s = cache.shape();
  const int dk = s.head_dim_k, dv = s.head_dim_v, heads = s.n_kv_heads;
  KvCache out(s, cache.storage(), moments);
  out.set_nc(cache.nc());
  std::vector<float> keys, values;  // (n, n_kv_heads, d): the layout KvCache::append takes
  for (int layer = 0; layer < s.n_layers; ++layer) {
    const KvHeadView first = cache.head(layer, 0);
    const int32_t n = first.length;
    if (n == 0) continue;
    keys.resize(std::size_t(n) * heads * dk);
    values.resize(std::size_t(n) * heads * dv);
    for (int h = 0; h < heads; ++h) {
      const KvHeadView view = cache.head(layer, h);
      MKV_ASSERT(view.length == n && std::memcmp(view.positions, first.positions, sizeof(int32_t) * n) == 0);
      const HeadRows k = HeadRows::keys(view), v = HeadRows::values(view);
      for (int32_t t = 0; t < n; ++t) {
        std::memcpy(&keys[(std::size_t(t) * heads + h) * dk], k.row(t), sizeof(float) * dk);
        std::memcpy(&values[(std::size_t(t) * heads + h) * dv], v.row(t), sizeof(float) * dv);
      }
    }
    out.append(layer, n, keys.data(), values.data(), first.positions);
  }
  return out;
}

}  // namespace mkv
