#include "kv/moment_groups.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "ops/matmul.h"
#include "ops/vec.h"

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

// Float copies of the centroids for the Lloyd assignment, which only needs an argmin:
// argmin_g ‖x − c_g‖² = argmin_g (‖c_g‖² − 2 x·c_g), the dot products of all rows with all
// centroids as one matrix product.
class CentroidTable {
 public:
  CentroidTable(const std::vector<double>& centroids, const std::vector<bool>& used, int d)
      : d_(d), c_(centroids.begin(), centroids.end()), norm_(used.size()) {
    for (std::size_t g = 0; g < used.size(); ++g)
      norm_[g] = used[g] ? vec_dot(&c_[g * d], &c_[g * d], d) : std::numeric_limits<float>::infinity();
  }
  // assign[i] = index of the used centroid nearest to row i of keys (m, d).
  void nearest(const float* keys, int64_t m, std::vector<int>& assign) {
    const int n_groups = int(norm_.size());
    dots_.resize(std::size_t(m) * n_groups);
    matmul(WeightMatrix{GgmlType::F32, c_.data(), n_groups, d_}, keys, m, dots_.data());
    for (int64_t i = 0; i < m; ++i) {
      const float* dot = &dots_[std::size_t(i) * n_groups];
      int best = 0;
      float best_score = std::numeric_limits<float>::infinity();
      for (int g = 0; g < n_groups; ++g) {
        if (norm_[g] == std::numeric_limits<float>::infinity()) continue;
        const float score = norm_[g] - 2.0f * dot[g];
        if (score < best_score) best_score = score, best = g;
      }
      assign[i] = best;
    }
  }

 private:
  int d_;
  std::vector<float> c_;     // (G, d) centroids
  std::vector<float> norm_;  // (G) ‖c_g‖², infinite for unused groups
  std::vector<float> dots_;  // (m, G) x_i · c_g
};

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
  // Farthest-point seeding of the empty groups. far[i]: squared distance from row i to its
  // nearest chosen centroid (infinite while none is chosen), updated as each centroid is chosen.
  if (std::find(used.begin(), used.end(), false) != used.end()) {
    std::vector<double> far(m, std::numeric_limits<double>::infinity());
    auto choose = [&](int g) {
      used[g] = true;
      for (int64_t i = 0; i < m; ++i)
        far[i] = std::min(far[i], sq_distance(keys + i * d_k_, &centroids[std::size_t(g) * d_k_], d_k_));
    };
    for (int g = 0; g < n_groups; ++g)
      if (used[g]) choose(g);
    for (int g = 0; g < n_groups; ++g) {
      if (used[g]) continue;
      const int64_t seed = std::max_element(far.begin(), far.end()) - far.begin();  // first farthest row
      if (far[seed] == 0.0) break;  // no distinct row left to seed with
      for (int a = 0; a < d_k_; ++a) centroids[std::size_t(g) * d_k_ + a] = keys[seed * d_k_ + a];
      choose(g);
    }
  }

  // Lloyd steps on the batch; a group's centroid also weighs its already-merged tokens.
  std::vector<int> assign(m, -1), previous(m);  // (m) group of each row, now and before this step
  for (int step = 0; step < kLloydSteps; ++step) {
    CentroidTable table(centroids, used, d_k_);
    previous.swap(assign);
    table.nearest(keys, m, assign);
    const bool changed = assign != previous;
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
