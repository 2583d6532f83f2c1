#include "eval/divergence.h"

#include <algorithm>
#include <cmath>

#include "ops/vec.h"

namespace mkv {

void DivergenceStats::add(const float* reference, const float* logits, int n_vocab, int32_t target) {
  const double lse_ref = log_sum_exp(reference, n_vocab), lse = log_sum_exp(logits, n_vocab);
  double kl = 0.0;  // Σ p (log p − log q), in float64
  for (int t = 0; t < n_vocab; ++t) {
    const double log_p = reference[t] - lse_ref, log_q = logits[t] - lse;
    kl += std::exp(log_p) * (log_p - log_q);
  }
  kl_sum_ += std::max(kl, 0.0);
  same_top1_ += std::max_element(reference, reference + n_vocab) - reference ==
                std::max_element(logits, logits + n_vocab) - logits;
  nll_reference_sum_ += lse_ref - reference[target];
  nll_sum_ += lse - logits[target];
  ++n_;
}

void DivergenceStats::merge(const DivergenceStats& other) {
  n_ += other.n_;
  same_top1_ += other.same_top1_;
  kl_sum_ += other.kl_sum_;
  nll_reference_sum_ += other.nll_reference_sum_;
  nll_sum_ += other.nll_sum_;
}

}  // namespace mkv
