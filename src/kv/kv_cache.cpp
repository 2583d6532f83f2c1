#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/quant.h"

namespace mkv {
namespace {

std::size_t element_bytes(KvStorage storage) { return storage == KvStorage::F32 ? 4 : 2; }

// Appends `n` float32 values to `dst` encoded in `storage`.
void append_encoded(std::vector<uint8_t>& dst, KvStorage storage, const float* src, int n) {
  const std::size_t old = dst.size();
  dst.resize(old + n * element_bytes(storage));
  if (storage == KvStorage::F32) {
    std::memcpy(dst.data() + old, src, n * sizeof(float));
    return;
  }
  auto* out = reinterpret_cast<uint16_t*>(dst.data() + old);
  for (int i = 0; i < n; ++i) out[i] = f32_to_fp16(src[i]);
}

void decode_rows(KvStorage storage, const void* rows, int32_t first, int32_t count, int dim, float* dst) {
  const std::size_t offset = static_cast<std::size_t>(first) * dim, n = static_cast<std::size_t>(count) * dim;
  if (storage == KvStorage::F32)
    std::memcpy(dst, static_cast<const float*>(rows) + offset, n * sizeof(float));
  else
    dequantize_row(GgmlType::F16, static_cast<const uint16_t*>(rows) + offset, dst, static_cast<int64_t>(n));
}

// Copies the rows listed in `keep` (row size `row_elems`) into a new, exactly sized buffer, one
// copy per run of consecutive rows (kept rows come in runs: sinks, window, clusters).
template <typename T>
std::vector<T> gather_rows(const std::vector<T>& rows, std::size_t row_elems,
                           std::span<const int32_t> keep) {
  std::vector<T> out;
  out.reserve(keep.size() * row_elems);
  for (std::size_t j = 0; j < keep.size();) {
    std::size_t end = j + 1;
    while (end < keep.size() && keep[end] == keep[end - 1] + 1) ++end;
    const T* first = rows.data() + keep[j] * row_elems;
    out.insert(out.end(), first, first + (end - j) * row_elems);
    j = end;
  }
  return out;
}

}  // namespace

void KvHeadView::key(int32_t i, float* dst) const { decode_rows(storage, keys, i, 1, head_dim_k, dst); }
void KvHeadView::value(int32_t i, float* dst) const { decode_rows(storage, values, i, 1, head_dim_v, dst); }

HeadRows::HeadRows(KvStorage storage, const void* rows, int32_t length, int dim) : dim_(dim) {
  if (storage == KvStorage::F32) {
    data_ = static_cast<const float*>(rows);
    return;
  }
  decoded_.resize(static_cast<std::size_t>(length) * dim);
  if (length > 0) decode_rows(storage, rows, 0, length, dim, decoded_.data());
  data_ = decoded_.data();
}
HeadRows HeadRows::keys(const KvHeadView& view) { return {view.storage, view.keys, view.length, view.head_dim_k}; }
HeadRows HeadRows::values(const KvHeadView& view) { return {view.storage, view.values, view.length, view.head_dim_v}; }

KvCache::KvCache(KvCacheShape shape, KvStorage storage, MomentConfig moments)
    : shape_(shape), storage_(storage), moment_config_(moments) {
  MKV_CHECK(shape.n_layers > 0 && shape.n_kv_heads > 0 && shape.head_dim_k > 0 && shape.head_dim_v > 0,
            "invalid KV cache shape ({} layers, {} KV heads, head dims {}/{})", shape.n_layers,
            shape.n_kv_heads, shape.head_dim_k, shape.head_dim_v);
  heads_.resize(static_cast<std::size_t>(shape.n_layers) * shape.n_kv_heads);
  clear();
}

KvCache::HeadStore& KvCache::store(int layer, int kv_head) {
  MKV_ASSERT(layer >= 0 && layer < shape_.n_layers && kv_head >= 0 && kv_head < shape_.n_kv_heads);
  return heads_[static_cast<std::size_t>(layer) * shape_.n_kv_heads + kv_head];
}

const KvCache::HeadStore& KvCache::store(int layer, int kv_head) const {
  return const_cast<KvCache*>(this)->store(layer, kv_head);
}

void KvCache::append(int layer, int n, const float* k, const float* v, const int32_t* positions) {
  const int dk = shape_.head_dim_k, dv = shape_.head_dim_v, h_kv = shape_.n_kv_heads;
  for (int h = 0; h < h_kv; ++h) {
    HeadStore& s = store(layer, h);
    MKV_ASSERT(s.positions.empty() || n == 0 || positions[0] > s.positions.back());
    for (int t = 0; t < n; ++t) {
      append_encoded(s.keys, storage_, k + (static_cast<std::size_t>(t) * h_kv + h) * dk, dk);
      append_encoded(s.values, storage_, v + (static_cast<std::size_t>(t) * h_kv + h) * dv, dv);
      s.positions.push_back(positions[t]);
    }
  }
}

void KvCache::retain(int layer, int kv_head, std::span<const int32_t> keep) {
  HeadStore& s = store(layer, kv_head);
  const auto length = static_cast<int32_t>(s.positions.size());
  for (std::size_t j = 0; j < keep.size(); ++j)
    MKV_ASSERT(keep[j] >= 0 && keep[j] < length && (j == 0 || keep[j] > keep[j - 1]));
  if (static_cast<int32_t>(keep.size()) == length) return;

  if (tracks_moments()) {
    // Fold the evicted rows (those not in `keep`) into the head's moments as one batch.
    const int dk = shape_.head_dim_k, dv = shape_.head_dim_v;
    const std::size_t n_evicted = length - keep.size();
    std::vector<float> evicted_keys(n_evicted * dk), evicted_values(n_evicted * dv);  // (n_evicted, d)
    KvHeadView view = head(layer, kv_head);
    std::size_t e = 0, j = 0;
    for (int32_t i = 0; i < length; ++i) {
      if (j < keep.size() && keep[j] == i) {
        ++j;
        continue;
      }
      view.key(i, evicted_keys.data() + e * dk);
      view.value(i, evicted_values.data() + e * dv);
      ++e;
    }
    s.moments.merge_rows(evicted_keys.data(), evicted_values.data(), static_cast<int64_t>(n_evicted));
  }
  const std::size_t eb = element_bytes(storage_);
  s.keys = gather_rows(s.keys, shape_.head_dim_k * eb, keep);
  s.values = gather_rows(s.values, shape_.head_dim_v * eb, keep);
  s.positions = gather_rows(s.positions, 1, keep);
}

KvHeadView KvCache::head(int layer, int kv_head) const {
  const HeadStore& s = store(layer, kv_head);
  KvHeadView view;
  view.length = static_cast<int32_t>(s.positions.size());
  view.storage = storage_;
  view.keys = s.keys.data();
  view.values = s.values.data();
  view.positions = s.positions.data();
  view.moments = tracks_moments() ? &s.moments : nullptr;
  view.head_dim_k = shape_.head_dim_k;
  view.head_dim_v = shape_.head_dim_v;
  return view;
}

int32_t KvCache::length(int layer, int kv_head) const {
  return static_cast<int32_t>(store(layer, kv_head).positions.size());
}

int32_t KvCache::max_length() const {
  int32_t longest = 0;
  for (const auto& s : heads_) longest = std::max(longest, static_cast<int32_t>(s.positions.size()));
  return longest;
}

int64_t KvCache::total_tokens() const {
  int64_t total = 0;
  for (const auto& s : heads_) total += static_cast<int64_t>(s.positions.size());
  return total;
}

std::size_t KvCache::row_bytes() const {
  return (shape_.head_dim_k + shape_.head_dim_v) * element_bytes(storage_) + sizeof(int32_t);
}

std::size_t KvCache::token_bytes() const {
  std::size_t bytes = 0;
  for (const auto& s : heads_) bytes += s.keys.size() + s.values.size() + s.positions.size() * sizeof(int32_t);
  return bytes;
}

std::size_t KvCache::moment_bytes() const {
  if (!tracks_moments()) return 0;
  std::size_t numbers = 0;
  for (const auto& s : heads_)  // a head stores statistics once it has evicted something
    if (s.moments.count() > 0) numbers += static_cast<std::size_t>(s.moments.stored_numbers());
  return numbers * sizeof(float);
}

void KvCache::clear() {
  for (auto& s : heads_) {
    s = HeadStore{};
    if (tracks_moments()) s.moments = MomentGroups(shape_.head_dim_k, shape_.head_dim_v, moment_config_);
  }
}

}  // namespace mkv
