// Picks the next token from logits with llama.cpp's default chain: logit bias -> top-k -> top-p ->
// min-p -> temperature -> seeded draw. Temperature <= 0 means greedy (argmax of the biased logits,
// lowest id on ties).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace mkv {

// Defaults are llama.cpp's (common_params_sampling).
struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy
  int top_k = 40;            // keep the k most likely tokens; 0 = off
  float top_p = 0.95f;       // keep the smallest most-likely set whose probability reaches p; 1 = off
  float min_p = 0.05f;       // drop tokens less likely than min_p x the most likely one; 0 = off
  uint64_t seed = 0;         // same seed and logits => same tokens
  // (token id, bias) added to those logits first (llama.cpp's logit-bias sampler); -infinity bans
  // the token. An id may repeat: its biases add up.
  std::vector<std::pair<int32_t, float>> logit_bias = {};
};

class Sampler {
 public:
  // Throws MkvError for invalid parameters (top_p outside (0, 1], min_p outside [0, 1], top_k < 0,
  // non-finite temperature).
  explicit Sampler(SamplerParams params);

  // One token id in [0, logits.size()). Scratch grows on the first call only (per vocab size).
  // MkvError when a biased id is outside the logits, or the biases ban every token.
  int32_t sample(std::span<const float> logits);

  const SamplerParams& params() const { return params_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };
  // Filters narrow `candidates_` to a most-likely-first prefix of this length.
  size_t keep_top_k(size_t n);
  size_t keep_top_p(size_t n) const;
  size_t keep_min_p(size_t n) const;
  int32_t draw(size_t n);

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;  // (n_vocab) scratch, most likely first after keep_top_k
  std::vector<float> biased_;          // (n_vocab) the logits with logit_bias added
};

}  // namespace mkv
