// selection.h on plain arrays: top-k with sinks/window, budgets, PyramidKV and Ada-KV allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kv/selection.h"

namespace mkv {
namespace {

// Naive reference: protected rows plus the best (score desc, index desc) of the rest.
std::vector<int32_t> reference_keep(const std::vector<float>& scores, int32_t n_keep, int sinks, int window) {
  const int32_t n = int32_t(scores.size());
  if (n <= n_keep) {
    std::vector<int32_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  std::vector<int32_t> keep, rest;
  for (int32_t i = 0; i < n; ++i) (i < sinks || i >= n - window ? keep : rest).push_back(i);
  std::sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a > b;
  });
  keep.insert(keep.end(), rest.begin(), rest.begin() + (n_keep - int32_t(keep.size())));
  std::sort(keep.begin(), keep.end());
  return keep;
}

struct SelectCase {
  int32_t length, n_keep;
  int sinks, window;
};

class SelectKeep : public ::testing::TestWithParam<SelectCase> {};

TEST_P(SelectKeep, KeepsProtectedRowsAndExactlyTheTopScores) {
  const SelectCase c = GetParam();
  std::mt19937 rng(c.length * 31 + c.n_keep);
  std::uniform_int_distribution<int> coarse(0, 20);  // many ties on purpose
  std::vector<float> scores(c.length);
  for (float& s : scores) s = float(coarse(rng));
  const auto keep = select_keep(scores, c.n_keep, Protection{c.sinks, c.window});
  EXPECT_EQ(keep, reference_keep(scores, c.n_keep, c.sinks, c.window));
  EXPECT_EQ(int32_t(keep.size()), std::min(c.length, c.n_keep));
}

INSTANTIATE_TEST_SUITE_P(Cases, SelectKeep,
                         ::testing::Values(SelectCase{100, 40, 4, 32}, SelectCase{100, 36, 4, 32},
                                           SelectCase{100, 99, 4, 32}, SelectCase{100, 100, 4, 32},
                                           SelectCase{50, 200, 4, 32}, SelectCase{300, 16, 4, 0},
                                           SelectCase{300, 64, 0, 8}, SelectCase{8, 6, 4, 2}));

TEST(Selection, AutoWindowFollowsTheBudget) {
  EXPECT_EQ(observation_window(1), 1);
  EXPECT_EQ(observation_window(16), 1);
  EXPECT_EQ(observation_window(127), 1);
  EXPECT_EQ(observation_window(128), 2);
  EXPECT_EQ(observation_window(1024), 16);
  EXPECT_EQ(observation_window(2048), kMaxAutoWindow);
  EXPECT_EQ(observation_window(1'000'000'000), kMaxAutoWindow);
  EXPECT_EQ(resolve_window(5, 128), 5);
  EXPECT_EQ(resolve_window(Protection::kAutoWindow, 128), 2);
  // The resolved window is clamped like an explicit one: at L=5 none of it is protected.
  const Protection automatic{4, Protection::kAutoWindow};
  EXPECT_EQ(clamp_protection(automatic, 5).window, 0);
  EXPECT_EQ(clamp_protection(automatic, 16).window, 1);
  EXPECT_EQ(clamp_protection(automatic, 128).window, 2);
  EXPECT_EQ(clamp_protection(automatic, 300).window, 4);
  EXPECT_EQ(clamp_protection(automatic, 4096).window, 32);
  EXPECT_EQ(clamp_protection(automatic, 4).window, 0);
}

TEST(Selection, ClampsProtectionToTheBudget) {
  const Protection p = clamp_protection(Protection{4, 32}, 16);
  EXPECT_EQ(p.sinks, 4);
  EXPECT_EQ(p.window, 6);  // half of the 12 non-sink slots
  EXPECT_EQ(clamp_protection(Protection{4, 32}, 68).window, 32);
  EXPECT_EQ(clamp_protection(Protection{4, 32}, 64).window, 30);
  EXPECT_EQ(clamp_protection(Protection{4, 32}, 2).sinks, 2);
  EXPECT_EQ(clamp_protection(Protection{4, 32}, 2).window, 0);
  EXPECT_EQ(protected_count(20, Protection{4, 32}), 20);
  EXPECT_EQ(protected_count(100, Protection{4, 32}), 36);
}

TEST(Selection, BudgetResolvesTokensOrRatio) {
  EXPECT_EQ((Budget{64, 0.0}.resolve(1000)), 64);
  EXPECT_EQ((Budget{0, 0.25}.resolve(100)), 75);
  EXPECT_EQ((Budget{0, 0.5}.resolve(101)), 50);  // int(T·(1 − r)), kvpress
  EXPECT_EQ((Budget{}.resolve(77)), 77);          // ratio 0: nothing removed
}

TEST(Selection, PyramidBudgetsMatchTheFormulaByHand) {
  // L = 64, w = 8: B = 56, min = 56/20 = 2, max = 112 − 2 = 110 (< n − w = 504).
  const auto b = pyramid_budgets(64, 8, 512, 8, 20.0);
  // layer l: 110 − l·108/7 + 8
  const std::vector<int32_t> expected{118, 103, 88, 72, 57, 41, 26, 10};
  EXPECT_EQ(b, expected);
  // Short prompt n = 115: max = 2B − min = 110 ≥ n − w = 107 ⇒ max = 107, min = 112 − 107 = 5.
  const auto s = pyramid_budgets(64, 8, 115, 4, 20.0);
  EXPECT_EQ(s, (std::vector<int32_t>{115, 81, 47, 13}));
  EXPECT_EQ(pyramid_budgets(64, 8, 100, 4, 20.0), std::vector<int32_t>(4, 64));  // n < 2B
  EXPECT_EQ(pyramid_budgets(64, 8, 512, 1, 20.0), std::vector<int32_t>(1, 64));
}

TEST(Selection, AdaptiveBudgetsSumToTheLayerTotalAndRespectTheSafeguard) {
  std::mt19937 rng(9);
  const Protection p{4, 8};
  for (int trial = 0; trial < 50; ++trial) {
    const int heads = 4, length = 120, budget = 20 + trial;
    std::vector<std::vector<float>> scores(heads, std::vector<float>(length));
    std::exponential_distribution<float> heavy(1.0f);
    for (int h = 0; h < heads; ++h)
      for (float& s : scores[h]) s = heavy(rng) * float(h + 1);  // head 3 scores highest
    const auto b = adaptive_budgets(scores, p, budget, 0.2);
    EXPECT_EQ(std::accumulate(b.begin(), b.end(), 0), heads * budget);
    for (int h = 0; h < heads; ++h) EXPECT_GE(b[h], int(0.2 * budget)) << "head " << h;
    EXPECT_GT(b[3], b[0]);
  }
  // By hand: B = 10, head 0 holds all of the top H·B = 20 scores.
  std::vector<std::vector<float>> two(2, std::vector<float>(30, 0.0f));
  for (int i = 0; i < 30; ++i) two[0][i] = 1.0f + float(i);
  const auto b = adaptive_budgets(two, Protection{0, 0}, 10, 0.2);
  EXPECT_EQ(b, (std::vector<int32_t>{18, 2}));  // c = (20, 0): 20·0.8 + 2 = 18, 0 + 2 = 2
}

TEST(Selection, RoundsEvictEqualShares) {
  int32_t length = 100;
  std::vector<int32_t> seen;
  for (int left = 4; left >= 1; --left) seen.push_back(length = round_keep(length, 20, left));
  EXPECT_EQ(seen, (std::vector<int32_t>{80, 60, 40, 20}));
  EXPECT_EQ(round_keep(10, 20, 3), 10);
}

}  // namespace
}  // namespace mkv
