// Moment statistics of the tokens evicted from one KV head (METHODS.md §2): count n_e, key mean k̄,
// value mean v̄ and the centred value-key co-moment S̃ = Σ (v_i − v̄)(k_i − k̄)ᵀ. Merged exactly
// (Chan et al. parallel update) whenever the cache evicts a batch of rows; float64 accumulators
// so that data with a large common offset does not cancel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mkv {

class MomentStats {
 public:
  MomentStats() = default;
  MomentStats(int head_dim_k, int head_dim_v);

  // Folds m evicted rows in: keys (m, d_k) and values (m, d_v), float32 row-major.
  void merge_rows(const float* keys, const float* values, int64_t m);
  // Folds another summary in (exact parallel merge).
  void merge(const MomentStats& other);

  int64_t count() const { return count_; }
  int head_dim_k() const { return d_k_; }
  int head_dim_v() const { return d_v_; }
  const std::vector<double>& key_mean() const { return key_mean_; }      // (d_k)
  const std::vector<double>& value_mean() const { return value_mean_; }  // (d_v)
  const std::vector<double>& comoment() const { return comoment_; }      // (d_v, d_k) S̃, row-major

  // Numbers a deployment must store for this summary: d_k·d_v + d_k + d_v + 1.
  int64_t stored_numbers() const;

 private:
  int d_k_ = 0, d_v_ = 0;
  int64_t count_ = 0;
  std::vector<double> key_mean_, value_mean_, comoment_;
};

}  // namespace mkv
