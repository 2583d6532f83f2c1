// KeyDiff (src/kv/presses/keydiff.cpp), the press added as one file: its rows against a float64
// reference of kvpress's score, its place in the catalogue, and its composition with the shared
// wrappers (allocation, Ada-KV, NC) that it has no code for.
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

constexpr int kLayers = 2, kHeads = 4, kKvHeads = 2, kDim = 8, kTokens = 64;
const PressGeometry kGeometry{kLayers, kHeads, kKvHeads, kDim, kDim, 0.35355339f};

// A cache of kTokens random rows per head, a press attached from the start (as a session does).
struct KeyDiffRun {
  std::unique_ptr<Press> press;
  KvCache cache;
  std::vector<float> keys;  // (layer, token, kv_head, d): what was appended

  explicit KeyDiffRun(const std::string& spec)
      : press(PressConfig::parse(spec).make()),
        cache(KvCacheShape{kLayers, kKvHeads, kDim, kDim}, KvStorage::F32, press->moment_config()) {
    press->reset(kGeometry);
    cache.set_nc(press->nc());
    std::mt19937 rng(7);
    std::vector<int32_t> positions(kTokens);
    std::iota(positions.begin(), positions.end(), 0);
    for (int layer = 0; layer < kLayers; ++layer) {
      // Keys share a direction (mean 1) plus noise, so the cosines to the anchor differ.
      const auto k = test::normal_vector(rng, std::size_t(kTokens) * kKvHeads * kDim, 1.0f, 1.0f);
      const auto v = test::normal_vector(rng, std::size_t(kTokens) * kKvHeads * kDim);
      const auto q = test::normal_vector(rng, std::size_t(kTokens) * kHeads * kDim);
      keys.insert(keys.end(), k.begin(), k.end());
      cache.append(layer, kTokens, k.data(), v.data(), positions.data());
      press->observe(layer, kTokens, q.data(), positions.data(), cache);
    }
    press->compress(cache, CompressReason::AfterPrefill);
  }
  const float* key(int layer, int t, int h) const {
    return &keys[((std::size_t(layer) * kTokens + t) * kKvHeads + h) * kDim];
  }
  std::vector<int32_t> kept(int layer, int h) const {
    const KvHeadView view = cache.head(layer, h);
    return {view.positions, view.positions + view.length};
  }
};

// kvpress's KeyDiff score in float64: −cos(k_j, mean of the unit keys).
std::vector<double> reference_scores(const KeyDiffRun& run, int layer, int h) {
  std::vector<double> anchor(kDim, 0.0), scores(kTokens);
  for (int t = 0; t < kTokens; ++t) {
    const float* k = run.key(layer, t, h);
    double norm = 0.0;
    for (int i = 0; i < kDim; ++i) norm += double(k[i]) * k[i];
    for (int i = 0; i < kDim; ++i) anchor[i] += k[i] / std::sqrt(norm);
  }
  double anchor_norm = 0.0;
  for (double a : anchor) anchor_norm += a * a;
  for (int t = 0; t < kTokens; ++t) {
    const float* k = run.key(layer, t, h);
    double dot = 0.0, norm = 0.0;
    for (int i = 0; i < kDim; ++i) dot += k[i] * anchor[i], norm += double(k[i]) * k[i];
    scores[t] = -dot / std::sqrt(norm * anchor_norm);
  }
  return scores;
}

TEST(KeyDiff, KeepsTheSinksAndTheKeysLeastLikeTheMeanDirection) {
  constexpr int kBudget = 20, kSinks = 4;
  const KeyDiffRun run("keydiff:budget=20");
  for (int layer = 0; layer < kLayers; ++layer)
    for (int h = 0; h < kKvHeads; ++h) {
      const std::vector<double> s = reference_scores(run, layer, h);
      std::vector<int32_t> rest(kTokens - kSinks);
      std::iota(rest.begin(), rest.end(), kSinks);
      std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
      std::vector<int32_t> expected = {0, 1, 2, 3};
      expected.insert(expected.end(), rest.begin(), rest.begin() + (kBudget - kSinks));
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(run.kept(layer, h), expected) << "layer " << layer << " head " << h;
    }
}

TEST(KeyDiff, IsInTheCatalogueAndReadsNoQuery) {
  const PressDef& def = find_press("keydiff");
  EXPECT_EQ(def.python_class, "KeyDiff");
  const PressConfig c = PressConfig::parse("keydiff", Budget{32, 0.0});
  EXPECT_EQ(c.spec(), "keydiff:sinks=4,alloc=uniform,safeguard=0.2,beta=20,budget=32,decode_slack=-1,nc=0,groups=1,"
                      "clip=0,means_only=0");
  EXPECT_EQ(PressConfig::parse(c.spec()), c);
  EXPECT_EQ(c.queries_read(1000), 0);  // query-agnostic: compresses without a question
  EXPECT_EQ(PressConfig::parse("adakv:scorer=keydiff", Budget{32, 0.0}).queries_read(1000), 0);
  EXPECT_NE(press_help().find("  keydiff "), std::string::npos);
  EXPECT_THROW(PressConfig::parse("keydiff:window=8"), MkvError);  // it protects no recent window
}

TEST(KeyDiff, ComposesWithEveryAllocationAndNcWithoutCodeOfItsOwn) {
  for (const char* spec : {"keydiff:budget=20,alloc=adaptive", "keydiff:budget=20,alloc=global",
                           "keydiff:budget=20,alloc=pyramid", "adakv:scorer=keydiff,budget=20"}) {
    const KeyDiffRun run(spec);
    int64_t kept = 0;
    for (int layer = 0; layer < kLayers; ++layer)
      for (int h = 0; h < kKvHeads; ++h) kept += int64_t(run.kept(layer, h).size());
    EXPECT_LE(kept, int64_t(20) * kLayers * kKvHeads) << spec;
    EXPECT_GT(kept, 0) << spec;
  }
  // nc=1: the same rows, with the evicted ones folded into moments that attention corrects with.
  const KeyDiffRun plain("keydiff:budget=20"), nc("keydiff:budget=20,nc=1,groups=2");
  EXPECT_TRUE(nc.press->nc());
  EXPECT_TRUE(nc.cache.tracks_moments());
  EXPECT_FALSE(plain.cache.tracks_moments());
  for (int layer = 0; layer < kLayers; ++layer)
    for (int h = 0; h < kKvHeads; ++h) {
      EXPECT_EQ(nc.kept(layer, h), plain.kept(layer, h));
      EXPECT_EQ(nc.cache.head(layer, h).moments->count(), kTokens - 20);
    }
}

}  // namespace
}  // namespace mkv
