// What compression does at the model output (llama-perplexity's --kl-divergence view): for the
// same teacher-forced tokens, the next-token distributions of a compressed run against the full
// cache's. Per position: KL(full ‖ compressed), whether the top-1 tokens agree, and both NLLs.
#pragma once

#include <cstdint>

namespace mkv {

class DivergenceStats {
 public:
  // reference, logits: (n_vocab) logits of the full and the compressed run at one position;
  // target: the token that actually follows.
  void add(const float* reference, const float* logits, int n_vocab, int32_t target);
  void merge(const DivergenceStats& other);

  int64_t positions() const { return n_; }
  double mean_kl() const { return n_ ? kl_sum_ / n_ : 0.0; }
  double same_top1_percent() const { return n_ ? 100.0 * same_top1_ / n_ : 0.0; }
  double mean_nll_reference() const { return n_ ? nll_reference_sum_ / n_ : 0.0; }
  double mean_nll() const { return n_ ? nll_sum_ / n_ : 0.0; }
  double delta_nll() const { return mean_nll() - mean_nll_reference(); }

 private:
  int64_t n_ = 0;
  int64_t same_top1_ = 0;
  double kl_sum_ = 0.0, nll_reference_sum_ = 0.0, nll_sum_ = 0.0;
};

}  // namespace mkv
