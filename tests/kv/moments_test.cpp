// MomentStats (docs/METHODS.md §2): the exact merge against a float64 two-pass reference.
#include <gtest/gtest.h>

#include "kv/moment_groups.h"
#include "kv/moment_stats.h"
#include "kv/reference.h"

namespace mkv {
namespace {

constexpr int kDk = 6, kDv = 5;

// Two-pass float64 reference: means, S̃ (d_v, d_k) and Σ‖v − v̄‖².
struct Reference {
  std::vector<double> key_mean, value_mean, comoment;
  double value_sq_dev = 0.0;
};
Reference two_pass(const std::vector<float>& keys, const std::vector<float>& values) {
  const std::size_t n = keys.size() / kDk;
  Reference r{std::vector<double>(kDk), std::vector<double>(kDv), std::vector<double>(kDk * kDv)};
  for (std::size_t i = 0; i < n; ++i) {
    for (int a = 0; a < kDk; ++a) r.key_mean[a] += keys[i * kDk + a] / double(n);
    for (int b = 0; b < kDv; ++b) r.value_mean[b] += values[i * kDv + b] / double(n);
  }
  for (std::size_t i = 0; i < n; ++i)
    for (int b = 0; b < kDv; ++b) {
      const double dv = values[i * kDv + b] - r.value_mean[b];
      r.value_sq_dev += dv * dv;
      for (int a = 0; a < kDk; ++a) r.comoment[b * kDk + a] += dv * (keys[i * kDk + a] - r.key_mean[a]);
    }
  return r;
}

class MomentMerge : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(MomentMerge, MatchesTwoPassReferenceWithLargeOffset) {
  std::mt19937 rng(7);
  int n = 0;
  for (int m : GetParam()) n += m;
  // Keys and values share a large common offset (1e4): naive raw sums would cancel.
  std::vector<float> keys = test::normal_vector(rng, std::size_t(n) * kDk, 1e4f, 1.0f);
  std::vector<float> values = test::normal_vector(rng, std::size_t(n) * kDv, -1e4f, 1.0f);
  for (int i = 0; i < n; ++i) values[i * kDv] += 0.5f * (keys[i * kDk] - 1e4f);  // correlated pair
  const Reference ref = two_pass(keys, values);

  MomentStats stats(kDk, kDv);
  int start = 0;
  for (int m : GetParam()) {
    stats.merge_rows(&keys[std::size_t(start) * kDk], &values[std::size_t(start) * kDv], m);
    start += m;
  }
  ASSERT_EQ(stats.count(), n);
  double max_diff = 0.0;
  for (int a = 0; a < kDk; ++a) EXPECT_NEAR(stats.key_mean()[a], ref.key_mean[a], 1e-9);
  for (int b = 0; b < kDv; ++b) EXPECT_NEAR(stats.value_mean()[b], ref.value_mean[b], 1e-9);
  for (int i = 0; i < kDk * kDv; ++i) max_diff = std::max(max_diff, std::abs(stats.comoment()[i] - ref.comoment[i]));
  EXPECT_LT(max_diff, 1e-8 * n) << "max |S̃ − reference| = " << max_diff;
  EXPECT_NEAR(stats.value_sq_dev(), ref.value_sq_dev, 1e-8 * ref.value_sq_dev);
  // The float32 mirror holds C = S̃ / n_e.
  EXPECT_NEAR(stats.covariance_f32()[3], ref.comoment[3] / n, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Splits, MomentMerge,
                         ::testing::Values(std::vector<int>{200}, std::vector<int>{1, 199},
                                           std::vector<int>{50, 50, 50, 50}, std::vector<int>{7, 13, 1, 179},
                                           std::vector<int>(40, 1)));

TEST(MomentStats, MergeOfSummariesEqualsMergeOfRows) {
  std::mt19937 rng(3);
  const auto keys = test::normal_vector(rng, 30 * kDk, 5.0f), values = test::normal_vector(rng, 30 * kDv, -2.0f);
  MomentStats all(kDk, kDv), first(kDk, kDv), second(kDk, kDv);
  all.merge_rows(keys.data(), values.data(), 30);
  first.merge_rows(keys.data(), values.data(), 12);
  second.merge_rows(&keys[12 * kDk], &values[12 * kDv], 18);
  first.merge(second);
  for (int i = 0; i < kDk * kDv; ++i) EXPECT_NEAR(first.comoment()[i], all.comoment()[i], 1e-9);
  EXPECT_NEAR(first.value_sq_dev(), all.value_sq_dev(), 1e-9);
}

TEST(MomentStats, StoredNumbersFollowMethods) {
  EXPECT_EQ(MomentStats(8, 8).stored_numbers(), 8 * 8 + 8 + 8 + 1);
  EXPECT_EQ(MomentStats(8, 8, /*with_comoment=*/false).stored_numbers(), 17);
  MomentConfig grouped{true, 16, true, true};
  EXPECT_EQ(grouped.stored_numbers(128, 128), 16 * (128 * 128 + 128 + 128 + 2));
  const MomentConfig paper{true, 1, true, false};
  EXPECT_NEAR(paper.token_equivalents(128, 128), 65.0, 1.0);  // docs/METHODS.md §7.1
  EXPECT_EQ(MomentConfig{}.stored_numbers(8, 8), 0);  // not tracked: nothing stored
}

TEST(MomentGroups, SeparatedClustersLandInTheirOwnGroups) {
  std::mt19937 rng(11);
  std::vector<float> keys, values;
  for (int i = 0; i < 60; ++i) {  // three tight clusters around 0, 20, 40 on every axis
    const float centre = 20.0f * float(i % 3);
    for (float x : test::normal_vector(rng, kDk, centre, 0.1f)) keys.push_back(x);
    for (float x : test::normal_vector(rng, kDv)) values.push_back(x);
  }
  MomentGroups groups(kDk, kDv, MomentConfig{true, 3, true, false});
  groups.merge_rows(keys.data(), values.data(), 30);   // seeds the groups
  groups.merge_rows(&keys[30 * kDk], &values[30 * kDv], 30);  // assigned to the nearest
  EXPECT_EQ(groups.count(), 60);
  for (const MomentStats& g : groups.groups()) {
    EXPECT_EQ(g.count(), 20);
    const double centre = g.key_mean()[0];
    EXPECT_NEAR(centre, 20.0 * std::round(centre / 20.0), 0.2);
  }
}

}  // namespace
}  // namespace mkv
