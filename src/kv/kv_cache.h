// The KV cache: per layer and per KV head, a ragged store of retained tokens (keys post-RoPE,
// values, original positions) that really shrinks when tokens are evicted; per-head lengths may
// differ (Ada-KV, PyramidKV). When moment tracking is on, every evicted row is folded into the
// head's MomentStats before its memory is released.
//
// The cache owns memory; presses own math: a press decides which token indices a head keeps and
// calls retain(); it never writes the buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv/moment_groups.h"

namespace mkv {

enum class KvStorage { F32, F16 };

// The storage names of -ctk/-ctv, run.json and Python's cache_type: "f32", "f16".
inline const char* kv_storage_name(KvStorage storage) { return storage == KvStorage::F16 ? "f16" : "f32"; }
// nullopt for any other name.
inline std::optional<KvStorage> kv_storage_from_name(std::string_view name) {
  if (name == "f32") return KvStorage::F32;
  if (name == "f16") return KvStorage::F16;
  return std::nullopt;
}

struct KvCacheShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
};

// Read-only view of one head's retained tokens, oldest first (positions strictly increasing).
struct KvHeadView {
  int32_t length = 0;
  KvStorage storage = KvStorage::F32;
  const void* keys = nullptr;        // (length, head_dim_k) in `storage`
  const void* values = nullptr;      // (length, head_dim_v) in `storage`
  const int32_t* positions = nullptr;  // (length) original token positions
  const MomentGroups* moments = nullptr;  // evicted-token summary; nullptr when not tracked
  int head_dim_k = 0, head_dim_v = 0;

  // Row i converted to float32 (dst has head_dim_k / head_dim_v values).
  void key(int32_t i, float* dst) const;
  void value(int32_t i, float* dst) const;
};

// One head's keys or values as float32 rows (length, dim): the cache's own buffer when it stores
// float32 (no copy), else a decoded copy. Valid while the cache is not modified.
class HeadRows {
 public:
  static HeadRows keys(const KvHeadView& view);
  static HeadRows values(const KvHeadView& view);
  HeadRows(HeadRows&&) = default;  // a moved vector keeps its buffer, so data_ stays valid
  HeadRows(const HeadRows&) = delete;

  const float* data() const { return data_; }
  const float* row(int32_t i) const { return data_ + std::size_t(i) * dim_; }

 private:
  HeadRows(KvStorage storage, const void* rows, int32_t length, int dim);

  std::vector<float> decoded_;  // (length, dim) for storage other than float32; else empty
  const float* data_ = nullptr;
  int dim_ = 0;
};

class KvCache {
 public:
  // `moments` says what each head keeps about its evicted tokens (nothing unless .track).
  KvCache(KvCacheShape shape, KvStorage storage, MomentConfig moments = {});

  const KvCacheShape& shape() const { return shape_; }
  KvStorage storage() const { return storage_; }
  bool tracks_moments() const { return moment_config_.track; }
  const MomentConfig& moment_config() const { return moment_config_; }

  // Normalisation-corrected attention (docs/METHODS.md §3) on or off for every head of this cache.
  void set_nc(bool enabled) { nc_ = enabled; }
  bool nc() const { return nc_; }

  // Appends n tokens to every KV head of `layer`.
  // k: (n, n_kv_heads, head_dim_k) post-RoPE; v: (n, n_kv_heads, head_dim_v); positions: (n).
  void append(int layer, int n, const float* k, const float* v, const int32_t* positions);

  // Keeps exactly the token indices in `keep` (strictly increasing, each < length) of one head;
  // the others are evicted (folded into the moments when tracked) and their memory released.
  // Touches only that head's store: calls for different heads may run concurrently.
  void retain(int layer, int kv_head, std::span<const int32_t> keep);

  KvHeadView head(int layer, int kv_head) const;
  int32_t length(int layer, int kv_head) const;
  int32_t max_length() const;     // longest head over all layers
  int64_t total_tokens() const;   // sum of all heads' lengths

  std::size_t row_bytes() const;     // bytes of one token in one head: key + value + position
  std::size_t token_bytes() const;   // bytes of all retained rows (+ positions)
  std::size_t moment_bytes() const;  // bytes the moment summaries of heads that evicted need (float32)
  std::size_t bytes_held() const { return token_bytes() + moment_bytes(); }
  // What `positions` tokens would hold in every head uncompressed (rows only): the reference the
  // bytes a press keeps are compared with.
  int64_t uncompressed_bytes(int64_t positions) const {
    return positions * shape().n_layers * shape().n_kv_heads * int64_t(row_bytes());
  }

  void clear();  // drops all tokens and moments (a new sequence)

 private:
  struct HeadStore {
    std::vector<uint8_t> keys;     // (length, head_dim_k) in storage_
    std::vector<uint8_t> values;   // (length, head_dim_v) in storage_
    std::vector<int32_t> positions;  // (length)
    MomentGroups moments;
  };
  HeadStore& store(int layer, int kv_head);
  const HeadStore& store(int layer, int kv_head) const;

  KvCacheShape shape_;
  KvStorage storage_;
  MomentConfig moment_config_;
  bool nc_ = false;
  std::vector<HeadStore> heads_;  // (n_layers, n_kv_heads)
};

}  // namespace mkv
