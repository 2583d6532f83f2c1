// The Press interface: how the session drives KV-cache compression (kvpress's model).
//
// For every sequence the session calls, in this order:
//   reset(geometry)                          once, before the first token (a new sequence);
//   observe(layer, n, q, positions, cache)   in every forward pass, for every layer, after RoPE
//                                            and after this batch's keys/values were appended;
//   compress(cache, reason)                  after each prefill chunk, after the prefill, and
//                                            after every decode step (presses decide whether
//                                            to act: decode-time eviction is an option).
// The cache must be created with moment_config() (moments tracked when .track) and
// cache.set_nc(nc()). A press never writes cache buffers: it calls cache.retain().
#pragma once

#include <cstdint>
#include <string>

#include "kv/kv_cache.h"
#include "kv/moment_groups.h"
#include "kv/selection.h"

namespace mkv {

// Model shape a press needs; query head h belongs to KV head h / (n_heads / n_kv_heads).
struct PressGeometry {
  int n_layers = 0;
  int n_heads = 0;     // query heads
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  float scale = 0.0f;  // softmax scale τ

  int group_size() const { return n_heads / n_kv_heads; }
  void validate() const;  // throws MkvError on an inconsistent shape
};

enum class CompressReason { AfterPrefill, AfterChunk, AfterDecodeStep };

class Press {
 public:
  virtual ~Press() = default;

  // Starts a new sequence of a model with this geometry (drops all observed statistics).
  virtual void reset(const PressGeometry& geometry) = 0;

  // q: (n_tokens, n_heads, head_dim_k) post-RoPE queries of this batch; positions: (n_tokens).
  // The cache already holds this batch's keys (the last n_tokens rows of every head of `layer`).
  virtual void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                       const KvCache& cache) {}

  // Brings every head to its budget by cache.retain(); a head is compressed only if it is longer.
  virtual void compress(KvCache& cache, CompressReason reason) = 0;

  // What the cache must track about evicted tokens (nothing by default).
  virtual MomentConfig moment_config() const { return {}; }
  bool wants_moments() const { return moment_config().track; }
  // Whether attention uses the normalisation correction (cache.set_nc).
  virtual bool nc() const { return false; }

  // Numbers of moment statistics stored per KV head (0 without moments) and the same in
  // token-equivalents (a token costs d_k + d_v numbers): for comparisons at equal bytes.
  int64_t moment_numbers_per_head(const PressGeometry& g) const {
    return moment_config().stored_numbers(g.head_dim_k, g.head_dim_v);
  }
  double moment_token_equivalents(const PressGeometry& g) const {
    return moment_config().token_equivalents(g.head_dim_k, g.head_dim_v);
  }

  // The canonical spec, every parameter spelled out (set by the registry).
  const std::string& spec() const { return spec_; }
  void set_spec(std::string spec) { spec_ = std::move(spec); }

 private:
  std::string spec_;
};

}  // namespace mkv
