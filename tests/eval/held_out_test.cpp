// The held-out protocol: dev and test windows never share a token, do not depend on how many are
// asked for, are drawn in a seeded order; "first" is the legacy consecutive protocol; bootstrap
// intervals are seeded and bracket the mean.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "core/error.h"
#include "eval/held_out.h"
#include "support/test_support.h"

namespace mkv {
namespace {

std::vector<int32_t> counting_tokens(int n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), 100);
  return t;
}

TEST(HeldOut, DevAndTestAreDisjointAndStableAcrossCounts) {
  const auto tokens = counting_tokens(40 * 9 + 5);  // 40 slots of 9 tokens (windows of 10)
  const auto dev = held_out_windows(tokens, 1, 10, 100, TextSplit::Dev, 7);
  const auto test = held_out_windows(tokens, 1, 10, 100, TextSplit::Test, 7);
  EXPECT_EQ(dev.size() + test.size(), 40u);
  EXPECT_GT(dev.size(), 10u);
  EXPECT_GT(test.size(), 10u);
  std::set<int32_t> dev_tokens;
  for (const TextWindow& w : dev) {
    ASSERT_EQ(w.tokens.size(), 10u);
    EXPECT_EQ(w.tokens.front(), 1);  // BOS
    EXPECT_EQ(w.tokens[1], 100 + w.slot * 9);
    dev_tokens.insert(w.tokens.begin() + 1, w.tokens.end());
  }
  for (const TextWindow& w : test)
    for (std::size_t i = 1; i < w.tokens.size(); ++i) EXPECT_EQ(dev_tokens.count(w.tokens[i]), 0u) << "slot " << w.slot;
  // Asking for fewer windows takes a prefix of the same seeded order; another seed, another order.
  const auto first_five = held_out_windows(tokens, 1, 10, 5, TextSplit::Test, 7);
  ASSERT_EQ(first_five.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(first_five[i].slot, test[i].slot);
  const auto reseeded = held_out_windows(tokens, 1, 10, 100, TextSplit::Test, 8);
  std::vector<int64_t> a, b;
  for (const auto& w : test) a.push_back(w.slot);
  for (const auto& w : reseeded) b.push_back(w.slot);
  EXPECT_NE(a, b);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);  // the same slots: the split does not depend on the seed
}

TEST(HeldOut, FirstIsTheConsecutiveProtocol) {
  const auto tokens = counting_tokens(30);
  const auto first = held_out_windows(tokens, 1, 10, 5, TextSplit::First, 99);
  ASSERT_EQ(first.size(), 3u);  // 30 tokens hold three 9-token slots
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].slot, int64_t(i));
  EXPECT_THROW(parse_text_split("train"), MkvError);
  EXPECT_EQ(parse_text_split("test"), TextSplit::Test);
}

TEST(HeldOut, BootstrapIntervalIsSeededAndBracketsTheMean) {
  EXPECT_FALSE(bootstrap_mean_interval({0.5}).has_value());
  const std::vector<double> values = {0.1, 0.4, 0.2, 0.9, 0.3, 0.25, 0.15, 0.6};
  const auto a = bootstrap_mean_interval(values, 2000, 3), b = bootstrap_mean_interval(values, 2000, 3);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->low, b->low);
  EXPECT_EQ(a->high, b->high);
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  EXPECT_LT(a->low, mean);
  EXPECT_GT(a->high, mean);
  EXPECT_GE(a->low, 0.1);
  EXPECT_LE(a->high, 0.9);
  const auto constant = bootstrap_mean_interval({2.0, 2.0, 2.0});
  EXPECT_EQ(constant->low, 2.0);
  EXPECT_EQ(constant->high, 2.0);
}

}  // namespace
}  // namespace mkv
