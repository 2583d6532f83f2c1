#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "text/sampler.h"

namespace mkv {
namespace {

// Logits whose softmax is exactly `probabilities`.
std::vector<float> logits_of(const std::vector<double>& probabilities) {
  std::vector<float> logits;
  for (double p : probabilities) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

std::vector<float> random_logits(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(n);
  for (float& logit : logits) logit = normal(rng);
  return logits;
}

// Draw frequencies over `draws` samples with a fixed seed.
std::vector<double> frequencies(SamplerParams params, const std::vector<float>& logits, int draws = 200000) {
  params.seed = 1234;
  Sampler sampler(params);
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) counts[sampler.sample(logits)] += 1.0;
  for (double& c : counts) c /= draws;
  return counts;
}

// `weights` renormalised over the kept ids; zero elsewhere.
std::vector<double> renormalised(const std::vector<double>& weights, size_t kept) {
  double total = 0.0;
  for (size_t i = 0; i < kept; ++i) total += weights[i];
  std::vector<double> out(weights.size(), 0.0);
  for (size_t i = 0; i < kept; ++i) out[i] = weights[i] / total;
  return out;
}

void expect_distribution(const std::vector<double>& observed, const std::vector<double>& expected) {
  ASSERT_EQ(observed.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == 0.0)
      EXPECT_EQ(observed[i], 0.0) << "excluded id " << i << " was drawn";
    else
      EXPECT_NEAR(observed[i], expected[i], 0.006) << "id " << i;
  }
}

SamplerParams no_filters(float temperature = 1.0f) {
  return {.temperature = temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
}

const std::vector<double> kProbabilities = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04};

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  Sampler greedy({.temperature = 0.0f});
  EXPECT_EQ(greedy.sample(std::vector<float>{1.0f, 3.0f, -2.0f, 3.0f}), 1);
  EXPECT_EQ(greedy.sample(std::vector<float>{5.0f}), 0);
  Sampler negative({.temperature = -1.0f});
  const auto logits = random_logits(1000, 7);
  EXPECT_EQ(negative.sample(logits), std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(Sampler, SameSeedGivesSameSequence) {
  const auto logits = random_logits(500, 3);
  auto run = [&](uint64_t seed) {
    Sampler sampler({.top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = seed});
    std::vector<int32_t> ids;
    for (int i = 0; i < 200; ++i) ids.push_back(sampler.sample(logits));
    return ids;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, TopKOneIsGreedy) {
  Sampler sampler({.temperature = 1.5f, .top_k = 1, .seed = 9});
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const auto logits = random_logits(300, seed);
    EXPECT_EQ(sampler.sample(logits), std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
}

TEST(Sampler, DrawsTheSoftmaxWithoutFilters) {
  expect_distribution(frequencies(no_filters(), logits_of(kProbabilities)), kProbabilities);
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplerParams params = no_filters();
  params.top_k = 2;
  expect_distribution(frequencies(params, logits_of(kProbabilities)), renormalised(kProbabilities, 2));
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  SamplerParams params = no_filters();
  params.top_p = 0.7f;  // 0.4 + 0.25 < 0.7 <= 0.4 + 0.25 + 0.15
  expect_distribution(frequencies(params, logits_of(kProbabilities)), renormalised(kProbabilities, 3));
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  SamplerParams params = no_filters();
  params.min_p = 0.3f;  // keeps p >= 0.12
  expect_distribution(frequencies(params, logits_of(kProbabilities)), renormalised(kProbabilities, 3));
  params.min_p = 0.5f;  // keeps p >= 0.2
  expect_distribution(frequencies(params, logits_of(kProbabilities)), renormalised(kProbabilities, 2));
}

TEST(Sampler, TemperatureScalesAfterFiltering) {
  // Filters see temperature-1 probabilities; the kept ones are then drawn with p^(1/T).
  std::vector<double> flattened;
  for (double p : kProbabilities) flattened.push_back(std::sqrt(p));
  expect_distribution(frequencies(no_filters(2.0f), logits_of(kProbabilities)), renormalised(flattened, 6));
  SamplerParams params = no_filters(2.0f);
  params.top_p = 0.7f;
  expect_distribution(frequencies(params, logits_of(kProbabilities)), renormalised(flattened, 3));
}

TEST(Sampler, DefaultChainCombinesFilters) {
  // Defaults: top_k 40, top_p 0.95, min_p 0.05, T 0.8. Ids below min_p x best never appear.
  const auto logits = random_logits(1000, 11);
  const float best = *std::max_element(logits.begin(), logits.end());
  Sampler sampler(SamplerParams{});
  for (int i = 0; i < 5000; ++i) {
    const int32_t id = sampler.sample(logits);
    EXPECT_GE(logits[id], best + std::log(0.05f) - 1e-5f);
  }
}

TEST(Sampler, RejectsInvalidParameters) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(Sampler({.top_p = 0.0f}), MkvError);
  EXPECT_THROW(Sampler({.top_p = 1.5f}), MkvError);
  EXPECT_THROW(Sampler({.top_p = nan}), MkvError);
  EXPECT_THROW(Sampler({.min_p = -0.1f}), MkvError);
  EXPECT_THROW(Sampler({.min_p = 1.1f}), MkvError);
  EXPECT_THROW(Sampler({.top_k = -1}), MkvError);
  EXPECT_THROW(Sampler({.temperature = std::numeric_limits<float>::infinity()}), MkvError);
  EXPECT_THROW(Sampler({.temperature = nan}), MkvError);
  Sampler sampler(SamplerParams{});
  EXPECT_THROW(sampler.sample(std::span<const float>{}), MkvError);
}

TEST(Sampler, LogitBiasComesFirstInTheChainAndBansNeverDraw) {
  const auto logits = random_logits(300, 5);
  const int32_t best = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  const float inf = std::numeric_limits<float>::infinity();
  // Greedy picks the argmax of the biased logits.
  Sampler greedy({.temperature = 0.0f, .logit_bias = {{7, 1000.0f}}});
  EXPECT_EQ(greedy.sample(logits), 7);
  Sampler banned_best({.temperature = 0.0f, .logit_bias = {{best, -inf}}});
  std::vector<float> without_best = logits;
  without_best[best] = -inf;
  EXPECT_EQ(banned_best.sample(logits), int32_t(std::max_element(without_best.begin(), without_best.end()) -
                                                 without_best.begin()));
  // Biases on one id add up; sampled, a ban is never drawn, even when top-k keeps more tokens
  // than are allowed.
  Sampler twice({.temperature = 0.0f, .logit_bias = {{9, 600.0f}, {9, 600.0f}, {7, 1000.0f}}});
  EXPECT_EQ(twice.sample(logits), 9);
  std::vector<std::pair<int32_t, float>> bans;
  for (int32_t id = 0; id < 298; ++id) bans.emplace_back(id, -inf);  // only 298 and 299 stay
  Sampler sampled({.temperature = 1.5f, .top_k = 40, .top_p = 1.0f, .min_p = 0.0f, .seed = 3, .logit_bias = bans});
  for (int i = 0; i < 2000; ++i) EXPECT_GE(sampled.sample(logits), 298);
  // A bias outside the logits, a ban of everything, and a bias that is no number are errors.
  Sampler outside({.logit_bias = {{300, 1.0f}}});
  EXPECT_THROW(outside.sample(logits), MkvError);
  bans.emplace_back(298, -inf);
  bans.emplace_back(299, -inf);
  Sampler everything({.temperature = 0.0f, .logit_bias = bans});
  EXPECT_THROW(everything.sample(logits), MkvError);
  EXPECT_THROW(Sampler({.logit_bias = {{1, std::numeric_limits<float>::quiet_NaN()}}}), MkvError);
  EXPECT_THROW(Sampler({.logit_bias = {{1, inf}}}), MkvError);
  EXPECT_THROW(Sampler({.logit_bias = {{-1, 1.0f}}}), MkvError);
}

}  // namespace
}  // namespace mkv
