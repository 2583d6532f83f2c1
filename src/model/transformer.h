// The transformer forward pass (llama / qwen2 / qwen3), readable top to bottom. The caller owns
// the KV cache and passes it in; weights stay const; all scratch is allocated at construction
// for batches of up to `max_batch` tokens.
#pragma once

#include <cstdint>
#include <span>

#include "core/aligned_buffer.h"
#include "kv/kv_cache.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace mkv {

class GgufFile;

// Lets analysis code and presses see activations without forking the forward pass.
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // After the batch's keys/values were appended to layer `layer` of the cache, before attention.
  // q: (n_tokens, n_heads, head_dim_k) post-RoPE; positions: (n_tokens).
  virtual void on_queries(int layer, int n_tokens, const float* q, const int32_t* positions,
                          const KvCache& cache) = 0;
};

// One sequence's rows of a batch: rows [first, first + count) attend to (and are appended to)
// their own cache; the observer (may be null) sees that sequence's queries.
struct BatchSegment {
  KvCache* cache = nullptr;
  ForwardObserver* observer = nullptr;
  int first = 0, count = 0;
};

class Transformer {
 public:
  // Binds the weights of `file` (which must outlive this object).
  Transformer(const GgufFile& file, int max_batch);

  const ModelConfig& config() const { return config_; }
  int max_batch() const { return max_batch_; }
  KvCacheShape cache_shape() const;

  // Runs tokens[0..n) at positions[0..n) (n <= max_batch), appending their keys and values to
  // `cache`. logits: (n, n_vocab) when all_logits, else (n_vocab) for the last token only.
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> positions, KvCache& cache,
               float* logits, bool all_logits, ForwardObserver* observer = nullptr);

  // One decode step of several sequences in one pass over the weights: row i is token i at
  // positions[i] of the sequence whose cache is caches[i] (observers[i] may be null). logits:
  // (n, n_vocab). Each row's logits are bitwise those forward() gives that sequence alone.
  void forward_decode_batch(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                            std::span<KvCache* const> caches, std::span<ForwardObserver* const> observers,
                            float* logits);

 private:
  // The layers over the n rows in x_, sequence by sequence where the cache is involved.
  // row_invariant: every product gives each row what it would give that row alone.
  void run_layers(int n, const int32_t* positions, std::span<const BatchSegment> segments, bool row_invariant);
  void attention_block(int layer, int n, const int32_t* positions, std::span<const BatchSegment> segments,
                       bool row_invariant);
  void ffn_block(int layer, int n, bool row_invariant);
  void embed(std::span<const int32_t> tokens);

  ModelConfig config_;
  ModelWeights weights_;
  Rope rope_;
  int max_batch_;
  // Scratch, (max_batch, width) row-major:
  AlignedBuffer<float> x_;       // residual stream (n_embd)
  AlignedBuffer<float> xn_;      // normalised input of a block (n_embd)
  AlignedBuffer<float> q_;       // queries (n_heads·hd_k)
  AlignedBuffer<float> k_;       // keys (n_kv_heads·hd_k)
  AlignedBuffer<float> v_;       // values (n_kv_heads·hd_v)
  AlignedBuffer<float> attn_;    // attention outputs (n_heads·hd_v)
  AlignedBuffer<float> gate_;    // FFN gate, then silu(gate)·up (n_ff)
  AlignedBuffer<float> up_;      // FFN up (n_ff)
};

}  // namespace mkv
