// TOVA (src/kv/presses/tova.cpp), a press added as one file: the rows it keeps after a prefill and
// after each decode step against a float64 reference of the newest query's head-averaged
// attention, one ranking per layer, and its place in the catalogue.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "kv/press_catalog.h"
#include "kv/press_config.h"
#include "kv/reference.h"

namespace mkv {
namespace {

constexpr int kLayers = 2, kHeads = 4, kKvHeads = 2, kGroup = kHeads / kKvHeads, kDim = 8, kTokens = 48;
constexpr float kScale = 0.35355339f;
const PressGeometry kGeometry{kLayers, kHeads, kKvHeads, kDim, kDim, kScale};

// A press attached from the start; every token's keys, values and queries are kept for the
// reference (position t of layer l: k (kKvHeads, d), q (kHeads, d)).
struct TovaRun {
  std::unique_ptr<Press> press;
  KvCache cache;
  std::mt19937 rng{5};
  std::vector<std::vector<float>> keys, queries;  // (layer) → (token, heads, d)
  int32_t length = 0;                              // tokens of the sequence so far

  explicit TovaRun(const std::string& spec)
      : press(PressConfig::parse(spec).make()),
        cache(KvCacheShape{kLayers, kKvHeads, kDim, kDim}, KvStorage::F32, press->moment_config()),
        keys(kLayers),
        queries(kLayers) {
    press->reset(kGeometry);
    cache.set_nc(press->nc());
    step(kTokens, CompressReason::AfterPrefill);
  }
  // One forward of n tokens, then the press's compression step.
  void step(int n, CompressReason reason) {
    std::vector<int32_t> positions(n);
    std::iota(positions.begin(), positions.end(), length);
    for (int layer = 0; layer < kLayers; ++layer) {
      const auto k = test::normal_vector(rng, std::size_t(n) * kKvHeads * kDim, 0.0f, 1.5f);
      const auto v = test::normal_vector(rng, std::size_t(n) * kKvHeads * kDim);
      const auto q = test::normal_vector(rng, std::size_t(n) * kHeads * kDim, 0.0f, 1.5f);
      keys[layer].insert(keys[layer].end(), k.begin(), k.end());
      queries[layer].insert(queries[layer].end(), q.begin(), q.end());
      cache.append(layer, n, k.data(), v.data(), positions.data());
      press->observe(layer, n, q.data(), positions.data(), cache);
    }
    length += n;
    press->compress(cache, reason);
  }
  std::vector<int32_t> kept(int layer, int h) const {
    const KvHeadView view = cache.head(layer, h);
    return {view.positions, view.positions + view.length};
  }
  // float64: the newest query's softmax attention to each held position, averaged over all heads.
  std::vector<double> reference(int layer, const std::vector<int32_t>& held) const {
    std::vector<double> score(held.size(), 0.0);
    const int32_t newest = length - 1;
    for (int h = 0; h < kHeads; ++h) {
      const float* q = &queries[layer][(std::size_t(newest) * kHeads + h) * kDim];
      std::vector<double> logit(held.size());
      double top = -1e300, sum = 0.0;
      for (std::size_t j = 0; j < held.size(); ++j) {
        const float* k = &keys[layer][(std::size_t(held[j]) * kKvHeads + h / kGroup) * kDim];
        double dot = 0.0;
        for (int i = 0; i < kDim; ++i) dot += double(q[i]) * k[i];
        logit[j] = kScale * dot;
        top = std::max(top, logit[j]);
      }
      for (double& l : logit) sum += (l = std::exp(l - top));
      for (std::size_t j = 0; j < held.size(); ++j) score[j] += logit[j] / sum / kHeads;
    }
    return score;
  }
};

// The rows TOVA keeps of `held`: the sinks, the newest, and the best of the rest by the reference.
std::vector<int32_t> expected_keep(const TovaRun& run, int layer, const std::vector<int32_t>& held, int budget,
                                   int sinks) {
  const std::vector<double> s = run.reference(layer, held);
  std::vector<int32_t> keep(held.begin(), held.begin() + sinks);
  keep.push_back(held.back());
  std::vector<std::size_t> rest(held.size() - sinks - 1);
  std::iota(rest.begin(), rest.end(), std::size_t(sinks));
  std::stable_sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) { return s[a] > s[b]; });
  for (int i = 0; i < budget - sinks - 1; ++i) keep.push_back(held[rest[i]]);
  std::sort(keep.begin(), keep.end());
  return keep;
}

TEST(Tova, KeepsWhatTheNewestQueryAttendsToAveragedOverEveryHead) {
  constexpr int kBudget = 16;
  TovaRun run("tova:budget=16");
  std::vector<int32_t> all(kTokens);
  std::iota(all.begin(), all.end(), 0);
  for (int layer = 0; layer < kLayers; ++layer) {
    const std::vector<int32_t> expected = expected_keep(run, layer, all, kBudget, 4);
    for (int h = 0; h < kKvHeads; ++h) EXPECT_EQ(run.kept(layer, h), expected) << "layer " << layer << " head " << h;
  }
}

TEST(Tova, EvictsAtEveryDecodeStepWhatTheNewTokenAttendsToLeast) {
  constexpr int kBudget = 16;
  TovaRun run("tova:budget=16");
  for (int step = 0; step < 6; ++step) {
    std::vector<std::vector<int32_t>> held(kLayers);
    for (int layer = 0; layer < kLayers; ++layer) held[layer] = run.kept(layer, 0);
    run.step(1, CompressReason::AfterDecodeStep);
    for (int layer = 0; layer < kLayers; ++layer) {
      held[layer].push_back(run.length - 1);  // the new token's row, then one row evicted
      const std::vector<int32_t> expected = expected_keep(run, layer, held[layer], kBudget, 4);
      for (int h = 0; h < kKvHeads; ++h) {
        EXPECT_EQ(run.kept(layer, h), expected) << "step " << step << " layer " << layer << " head " << h;
        EXPECT_EQ(run.cache.length(layer, h), kBudget);
      }
    }
  }
  // decode_slack=-1 turns decode-time eviction off: the cache grows past the budget.
  TovaRun prefill_only("tova:budget=16,decode_slack=-1");
  for (int step = 0; step < 3; ++step) prefill_only.step(1, CompressReason::AfterDecodeStep);
  EXPECT_EQ(prefill_only.cache.length(0, 0), kBudget + 3);
}

TEST(Tova, IsInTheCatalogueReadsTheNewestQueryAndDecodesByDefault) {
  EXPECT_EQ(find_press("tova").python_class, "TOVA");
  const PressConfig c = PressConfig::parse("tova", Budget{32, 0.0});
  EXPECT_EQ(c.spec(), "tova:window=1,sinks=4,alloc=uniform,safeguard=0.2,beta=20,budget=32,decode_slack=0,nc=0,"
                      "groups=1,clip=0,means_only=0");
  EXPECT_EQ(PressConfig::parse(c.spec()), c);
  EXPECT_EQ(c.queries_read(1000), 1);
  EXPECT_EQ(PressConfig::parse("tova:window=8", Budget{32, 0.0}).queries_read(1000), 8);
  EXPECT_EQ(PressConfig::parse("tova:decode_slack=4").integer("decode_slack"), 4);
  EXPECT_NE(press_help().find("  tova "), std::string::npos);
  EXPECT_THROW(PressConfig::parse("tova:window=0"), MkvError);
}

TEST(Tova, ComposesWithNcAndAdaKv) {
  TovaRun plain("tova:budget=16"), nc("tova:budget=16,nc=1");
  EXPECT_TRUE(nc.cache.tracks_moments());
  for (int step = 0; step < 3; ++step) {
    plain.step(1, CompressReason::AfterDecodeStep);
    nc.step(1, CompressReason::AfterDecodeStep);
  }
  for (int layer = 0; layer < kLayers; ++layer)
    for (int h = 0; h < kKvHeads; ++h) {
      EXPECT_EQ(nc.kept(layer, h), plain.kept(layer, h));
      EXPECT_EQ(nc.cache.head(layer, h).moments->count(), kTokens + 3 - 16);
    }
  const TovaRun ada("adakv:scorer=tova,budget=16");
  for (int layer = 0; layer < kLayers; ++layer) {
    int64_t kept = 0;
    for (int h = 0; h < kKvHeads; ++h) kept += ada.cache.length(layer, h);
    EXPECT_LE(kept, int64_t(16) * kKvHeads);
  }
}

}  // namespace
}  // namespace mkv
