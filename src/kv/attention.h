// Causal attention of a batch of queries over one layer of the KvCache, with GQA and optional
// normalisation correction (NC) from the heads' moments.
#pragma once

#include <cstdint>

#include "kv/kv_cache.h"

namespace mkv {

struct AttentionShape {
  int n_heads = 0;      // query heads; query head h uses KV head h / (n_heads / n_kv_heads)
  int head_dim_k = 0;
  int head_dim_v = 0;
  float scale = 0.0f;   // softmax scale τ (1/sqrt(head_dim) for our models)
};

// The last n_tokens rows of every head of `layer` are the batch's own tokens (just appended);
// batch token t sees the head's first (length − n_tokens + t + 1) rows.
// q: (n_tokens, n_heads, head_dim_k) post-RoPE; out: (n_tokens, n_heads, head_dim_v).
// When cache.nc() is set and a head has evicted tokens, each output is blended with the
// moment estimate (docs/METHODS.md §3). Parallel over tokens × heads.
void attend_layer(const KvCache& cache, int layer, const AttentionShape& shape, const float* q,
                  int n_tokens, float* out);

}  // namespace mkv
