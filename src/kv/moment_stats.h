// Moment statistics of the tokens evicted from one KV head (docs/METHODS.md §2): count n_e, key mean k̄,
// value mean v̄ and the centred value-key co-moment S̃ = Σ (v_i − v̄)(k_i − k̄)ᵀ. Merged exactly
// (Chan et al. parallel update) whenever the cache evicts a batch of rows; float64 accumulators
// so that data with a large common offset does not cancel.
//
// Also kept: the values' centred sum of squares Σ‖v_i − v̄‖² (one number, for the trust region of
// docs/METHODS.md §7) and a float32 mirror (k̄, v̄, C = S̃/n_e) refreshed on every merge, so that the
// per-query NC blend reads float32 only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mkv {

class MomentStats {
 public:
  MomentStats() = default;
  // with_comoment = false keeps means only (no S̃, no C): docs/METHODS.md §7.1 "means only" groups.
  MomentStats(int head_dim_k, int head_dim_v, bool with_comoment = true);

  // Folds m evicted rows in: keys (m, d_k) and values (m, d_v), float32 row-major.
  // Two passes over the batch (its own means, then its centred co-moment), then merge().
  void merge_rows(const float* keys, const float* values, int64_t m);
  // Folds another summary in (exact parallel merge). Both must have the same shape and flag.
  void merge(const MomentStats& other);
  void clear();  // back to n_e = 0

  int64_t count() const { return count_; }
  int head_dim_k() const { return d_k_; }
  int head_dim_v() const { return d_v_; }
  bool has_comoment() const { return with_comoment_; }
  const std::vector<double>& key_mean() const { return key_mean_; }      // (d_k)
  const std::vector<double>& value_mean() const { return value_mean_; }  // (d_v)
  const std::vector<double>& comoment() const { return comoment_; }      // (d_v, d_k) S̃, row-major; empty without comoment
  double value_sq_dev() const { return value_sq_dev_; }                  // Σ‖v_i − v̄‖²
  double value_rms_spread() const;                                       // sqrt(Σ‖v_i − v̄‖² / n_e)

  // float32 mirror, valid when count() > 0.
  const std::vector<float>& key_mean_f32() const { return key_mean_f_; }      // (d_k)
  const std::vector<float>& value_mean_f32() const { return value_mean_f_; }  // (d_v)
  const std::vector<float>& covariance_f32() const { return cov_f_; }         // (d_v, d_k) C = S̃/n_e; empty without comoment

  // Numbers a deployment must store for this summary: d_k·d_v + d_k + d_v + 1
  // (d_k + d_v + 1 without comoment).
  int64_t stored_numbers() const;

 private:
  void refresh_mirror();

  int d_k_ = 0, d_v_ = 0;
  bool with_comoment_ = true;
  int64_t count_ = 0;
  std::vector<double> key_mean_, value_mean_, comoment_;
  double value_sq_dev_ = 0.0;
  std::vector<float> key_mean_f_, value_mean_f_, cov_f_;
};

}  // namespace mkv
