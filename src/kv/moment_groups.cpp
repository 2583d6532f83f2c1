#include "kv/moment_groups.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace mkv {

namespace {

constexpr int kLloydSteps = 8;

double sq_distance(const float* x, const double* c, int d) {
  double s = 0.0;
  for (int a = 0; a < d; ++a) {
    const double t = x[a] - c[a];
    s += t * t;
  }
  return s;
}

// Index of the centroid (among `used`) nearest to x; centroids (G, d).
int nearest(const float* x, const std::vector<double>& centroids, const std::vector<bool>& used, int d) {
  int best = -1;
  double best_d = std::numeric_limits<double>::infinity();
  for (int g = 0; g < int(used.size()); ++g) {
    if (!used[g]) continue;
    const double dist = sq_distance(x, &centroids[std::size_t(g) * d], d);
    if (dist < best_d) best_d = dist, best = g;
  }
  return best;
}

}  // namespace

int64_t MomentConfig::stored_numbers(int head_dim_k, int head_dim_v) const {
  if (!track) return 0;
  const int64_t per_group = (comoment ? int64_t(head_dim_k) * head_dim_v : 0) + head_dim_k +
                            head_dim_v + 1 + (clip ? 1 : 0);
  return int64_t(groups) * per_group;
}

double MomentConfig::token_equivalents(int head_dim_k, int head_dim_v) const {
  return double(stored_numbers(head_dim_k, head_dim_v)) / double(head_dim_k + head_dim_v);
}

MomentGroups::MomentGroups(int head_dim_k, int head_dim_v, const MomentConfig& config)
    : d_k_(head_dim_k), d_v_(head_dim_v), config_(config) {
  MKV_ASSERT(config.groups >= 1);
  groups_.assign(config.groups, MomentStats(head_dim_k, head_dim_v, config.comoment));
}

int64_t MomentGroups::count() const {
  int64_t n = 0;
  for (const MomentStats& g : groups_) n += g.count();
  return n;
}

void MomentGroups::clear() {
  for (MomentStats& g : groups_) g.clear();
}

void MomentGroups::merge_rows(const float* keys, const float* values, int64_t m) {
  if (m <= 0) return;
  const int n_groups = int(groups_.size());
  if (n_groups == 1) return groups_[0].merge_rows(keys, values, m);

  // Centroids (G, d_k): the current key means, or a seed row for empty groups.
  std::vector<double> centroids(std::size_t(n_groups) * d_k_, 0.0);
  std::vector<bool> used(n_groups, false);
  for (int g = 0; g < n_groups; ++g) {
    if (groups_[g].count() == 0) continue;
    used[g] = true;
    for (int a = 0; a < d_k_; ++a) centroids[std::size_t(g) * d_k_ + a] = groups_[g].key_mean()[a];
  }
  for (int g = 0; g < n_groups; ++g) {  // farthest-point seeding of the empty groups
    if (used[g]) continue;
    int64_t seed = 0;
    double farthest = -1.0;
    for (int64_t i = 0; i < m; ++i) {
      const int c = nearest(keys + i * d_k_, centroids, used, d_k_);
      const double dist = c < 0 ? 0.0 : sq_distance(keys + i * d_k_, &centroids[std::size_t(c) * d_k_], d_k_);
      if (dist > farthest) farthest = dist, seed = i;
    }
    const bool any_used = std::find(used.begin(), used.end(), true) != used.end();
    if (any_used && farthest == 0.0) break;  // no distinct row left to seed with
    used[g] = true;
    for (int a = 0; a < d_k_; ++a) centroids[std::size_t(g) * d_k_ + a] = keys[seed * d_k_ + a];
  }

  // Lloyd steps on the batch; a group's centroid also weighs its already-merged tokens.
  std::vector<int> assign(m, -1);  // (m) group of each row
  for (int step = 0; step < kLloydSteps; ++step) {
    bool changed = false;
    for (int64_t i = 0; i < m; ++i) {
      const int c = nearest(keys + i * d_k_, centroids, used, d_k_);
      changed |= c != assign[i];
      assign[i] = c;
    }
    if (!changed) break;
    std::vector<double> sums(centroids.size(), 0.0);  // (G, d_k)
    std::vector<double> weight(n_groups, 0.0);        // (G)
    for (int g = 0; g < n_groups; ++g) {
      weight[g] = double(groups_[g].count());
      for (int a = 0; a < d_k_ && weight[g] > 0; ++a)
        sums[std::size_t(g) * d_k_ + a] = weight[g] * groups_[g].key_mean()[a];
    }
    for (int64_t i = 0; i < m; ++i) {
      weight[assign[i]] += 1.0;
      for (int a = 0; a < d_k_; ++a) sums[std::size_t(assign[i]) * d_k_ + a] += keys[i * d_k_ + a];
    }
    for (int g = 0; g < n_groups; ++g)
      for (int a = 0; a < d_k_ && weight[g] > 0; ++a)
        centroids[std::size_t(g) * d_k_ + a] = sums[std::size_t(g) * d_k_ + a] / weight[g];
  }

  // Gather each group's rows and merge them exactly.
  std::vector<float> gk, gv;  // (rows of group g, d_k), (rows of group g, d_v)
  for (int g = 0; g < n_groups; ++g) {
    gk.clear();
    gv.clear();
    for (int64_t i = 0; i < m; ++i) {
      if (assign[i] != g) continue;
      gk.insert(gk.end(), keys + i * d_k_, keys + (i + 1) * d_k_);
      gv.insert(gv.end(), values + i * d_v_, values + (i + 1) * d_v_);
    }
    groups_[g].merge_rows(gk.data(), gv.data(), int64_t(gk.size() / d_k_));
  }
}

}  // namespace mkv
