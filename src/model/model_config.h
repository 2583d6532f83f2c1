// Hyper-parameters of a transformer read from GGUF keys. llama / qwen2 / qwen3 differ only in
// the flags below (RoPE pairing, q/k/v biases, per-head q/k RMSNorm).
#pragma once

#include <cstdint>
#include <string>

#include "kv/press.h"
#include "ops/rope.h"

namespace mkv {

class GgufFile;

struct ModelConfig {
  std::string arch;        // general.architecture: llama | qwen2 | qwen3
  std::string name;        // general.name (may be empty)
  int n_vocab = 0;
  int n_embd = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;      // attention.key_length, else n_embd / n_heads
  int head_dim_v = 0;      // attention.value_length, else head_dim_k
  int n_ff = 0;
  int rope_dim = 0;        // rope.dimension_count, else head_dim_k
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  int context_length = 0;  // what the model was converted with (training window may be shorter)
  RopeStyle rope_style = RopeStyle::Norm;
  bool qkv_bias = false;   // qwen2
  bool qk_norm = false;    // qwen3

  float attention_scale() const;  // 1/sqrt(head_dim_k)
  // The shape a press needs (layers, heads, head sizes, the softmax scale): the one place it is built.
  PressGeometry press_geometry() const;

  // Reads and validates the {arch}.* keys; n_vocab from the token_embd tensor.
  static ModelConfig from_gguf(const GgufFile& file);
};

}  // namespace mkv
