// Rotary position embedding (RoPE) as llama.cpp applies it.
#pragma once

#include <cstdint>
#include <vector>

namespace mkv {

enum class RopeStyle {
  Norm,  // llama: rotate adjacent pairs (x[2i], x[2i+1])
  Neox,  // qwen2/qwen3: rotate (x[i], x[i + rope_dim/2])
};

class Rope {
 public:
  // head_dim: values per head; rope_dim: how many of them rotate (the rest pass through);
  // freq_factors: optional (rope_dim/2) divisors of each pair's frequency (Llama-3 rope_freqs).
  Rope(RopeStyle style, int head_dim, int rope_dim, float base, std::vector<float> freq_factors);

  // Rotates each of n_heads heads of x ((n_heads, head_dim), in place) to position `pos`.
  void apply(float* x, int n_heads, int32_t pos) const;

 private:
  RopeStyle style_;
  int head_dim_, rope_dim_;
  std::vector<double> inv_freq_;  // (rope_dim/2) base^(−2i/rope_dim) / freq_factors[i]
};

}  // namespace mkv
