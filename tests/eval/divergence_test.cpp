#include <gtest/gtest.h>

#include <cmath>

#include "eval/divergence.h"

namespace mkv {
namespace {

TEST(Divergence, IdenticalDistributionsHaveZeroKlAndAgree) {
  const float logits[4] = {1.0f, 2.0f, 0.5f, -1.0f};
  DivergenceStats s;
  s.add(logits, logits, 4, 1);
  EXPECT_NEAR(s.mean_kl(), 0.0, 1e-12);
  EXPECT_EQ(s.same_top1_percent(), 100.0);
  EXPECT_NEAR(s.delta_nll(), 0.0, 1e-12);
}

TEST(Divergence, HandComputedTwoTokenCase) {
  // p = softmax(0, 0) = (1/2, 1/2); q = softmax(log 3, 0) = (3/4, 1/4).
  const float reference[2] = {0.0f, 0.0f};
  const float compressed[2] = {static_cast<float>(std::log(3.0)), 0.0f};
  DivergenceStats s;
  s.add(reference, compressed, 2, /*target=*/1);
  const double kl = 0.5 * std::log(0.5 / 0.75) + 0.5 * std::log(0.5 / 0.25);
  EXPECT_NEAR(s.mean_kl(), kl, 1e-6);
  EXPECT_NEAR(s.mean_nll_reference(), std::log(2.0), 1e-6);
  EXPECT_NEAR(s.mean_nll(), std::log(4.0), 1e-6);
  EXPECT_NEAR(s.delta_nll(), std::log(2.0), 1e-6);
  EXPECT_EQ(s.same_top1_percent(), 100.0);  // the reference's tie resolves to the lowest id, 0
}

TEST(Divergence, MergeAveragesOverAllPositions) {
  const float a[2] = {0.0f, 5.0f}, b[2] = {5.0f, 0.0f};
  DivergenceStats s1, s2;
  s1.add(a, a, 2, 1);
  s2.add(a, b, 2, 1);
  s1.merge(s2);
  EXPECT_EQ(s1.positions(), 2);
  EXPECT_EQ(s1.same_top1_percent(), 50.0);
}

}  // namespace
}  // namespace mkv
