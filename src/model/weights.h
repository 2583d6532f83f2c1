// The weights of a llama / qwen2 / qwen3 model, viewed in place in the GGUF mapping (matrices)
// or dequantised to float32 (the small 1-D tensors: norms, biases, rope_freqs).
#pragma once

#include <vector>

#include "model/model_config.h"
#include "ops/matmul.h"

namespace mkv {

class GgufFile;

struct LayerWeights {
  std::vector<float> attn_norm;   // (n_embd)
  WeightMatrix wq, wk, wv;        // (n_heads·hd_k | n_kv_heads·hd_k | n_kv_heads·hd_v, n_embd)
  std::vector<float> bq, bk, bv;  // qwen2 biases, same widths as the outputs above; else empty
  std::vector<float> q_norm, k_norm;  // qwen3 per-head RMSNorm weights (hd_k); else empty
  WeightMatrix wo;                // (n_embd, n_heads·hd_v)
  std::vector<float> ffn_norm;    // (n_embd)
  WeightMatrix w_gate, w_up;      // (n_ff, n_embd)
  WeightMatrix w_down;            // (n_embd, n_ff)
};

struct ModelWeights {
  WeightMatrix token_embd;          // (n_vocab, n_embd): row t is token t's embedding
  std::vector<float> output_norm;   // (n_embd)
  WeightMatrix output;              // (n_vocab, n_embd); = token_embd when tied
  std::vector<float> rope_freqs;    // (rope_dim/2) Llama-3 frequency divisors; empty if absent
  std::vector<LayerWeights> layers;

  // Binds every tensor, checking presence, shape and type; the file must outlive the weights.
  static ModelWeights from_gguf(const GgufFile& file, const ModelConfig& config);
};

}  // namespace mkv
