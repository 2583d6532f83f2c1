// Several moment summaries per KV head (docs/METHODS.md §7, "beyond the paper"): evicted tokens are
// assigned to the nearest of G key centroids (online k-means, seeded from the first evicted
// batch), and each group is its own virtual slot in NC attention. G = 1 with comoment and no clip
// is exactly the paper's single summary.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/moment_stats.h"

namespace mkv {

// What a head's evicted-token summary holds; chosen by the press, applied by the cache.
struct MomentConfig {
  bool track = false;    // fold evicted rows into moments at all
  int groups = 1;        // G virtual slots per head
  bool comoment = true;  // false: means only (no S̃; the value estimate is v̄_g)
  bool clip = false;     // trust region: ‖τ C_g q‖ shrunk to at most the RMS spread of group values

  // Numbers a deployment stores per KV head: G·(d_k·d_v [comoment] + d_k + d_v + 1 + 1 [clip]).
  int64_t stored_numbers(int head_dim_k, int head_dim_v) const;
  // The same in token-equivalents: a retained token costs d_k + d_v numbers.
  double token_equivalents(int head_dim_k, int head_dim_v) const;
};

class MomentGroups {
 public:
  MomentGroups() = default;
  MomentGroups(int head_dim_k, int head_dim_v, const MomentConfig& config);

  // Folds m evicted rows in (keys (m, d_k), values (m, d_v)): each row joins its nearest group
  // after a few Lloyd steps on the batch; empty groups are first seeded farthest-point.
  void merge_rows(const float* keys, const float* values, int64_t m);
  void clear();

  int64_t count() const;  // n_e over all groups
  const MomentConfig& config() const { return config_; }
  const std::vector<MomentStats>& groups() const { return groups_; }  // (G); some may be empty
  int64_t stored_numbers() const { return config_.stored_numbers(d_k_, d_v_); }

 private:
  int d_k_ = 0, d_v_ = 0;
  MomentConfig config_;
  std::vector<MomentStats> groups_;  // (G)
};

}  // namespace mkv
