// Key norm (src/kv/presses/knorm.cpp), a press added as one file: its rows against a float64
// reference of kvpress's score, its place in the catalogue, and its composition with the shared
// wrappers (allocation, Ada-KV, NC).
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

// A cache of kTokens random rows per head with a press attached from the start (as a session does).
struct KnormRun {
  std::unique_ptr<Press> press;
  KvCache cache;
  std::vector<float> keys;  // (layer, token, kv_head, d): what was appended

  explicit KnormRun(const std::string& spec)
      : press(PressConfig::parse(spec).make()),
        cache(KvCacheShape{kLayers, kKvHeads, kDim, kDim}, KvStorage::F32, press->moment_config()) {
    press->reset(kGeometry);
    cache.set_nc(press->nc());
    std::mt19937 rng(11);
    std::vector<int32_t> positions(kTokens);
    std::iota(positions.begin(), positions.end(), 0);
    for (int layer = 0; layer < kLayers; ++layer) {
      const auto k = test::normal_vector(rng, std::size_t(kTokens) * kKvHeads * kDim);
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

TEST(Knorm, KeepsTheSinksAndTheKeysOfSmallestNorm) {
  constexpr int kBudget = 20, kSinks = 4;
  const KnormRun run("knorm:budget=20");
  for (int layer = 0; layer < kLayers; ++layer)
    for (int h = 0; h < kKvHeads; ++h) {
      std::vector<double> norm(kTokens);  // float64 ‖k_t‖
      for (int t = 0; t < kTokens; ++t) {
        const float* k = run.key(layer, t, h);
        for (int i = 0; i < kDim; ++i) norm[t] += double(k[i]) * k[i];
        norm[t] = std::sqrt(norm[t]);
      }
      std::vector<int32_t> rest(kTokens - kSinks);
      std::iota(rest.begin(), rest.end(), kSinks);
      std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) { return norm[a] < norm[b]; });
      std::vector<int32_t> expected = {0, 1, 2, 3};
      expected.insert(expected.end(), rest.begin(), rest.begin() + (kBudget - kSinks));
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(run.kept(layer, h), expected) << "layer " << layer << " head " << h;
      // Every evicted key is at least as long as every kept one past the sinks.
      double longest_kept = 0.0;
      for (int32_t t : run.kept(layer, h))
        if (t >= kSinks) longest_kept = std::max(longest_kept, norm[t]);
      for (int t = kSinks; t < kTokens; ++t)
        if (!std::binary_search(expected.begin(), expected.end(), t)) EXPECT_GE(norm[t], longest_kept);
    }
}

TEST(Knorm, IsInTheCatalogueAndReadsNoQuery) {
  EXPECT_EQ(find_press("knorm").python_class, "Knorm");
  const PressConfig c = PressConfig::parse("knorm", Budget{32, 0.0});
  EXPECT_EQ(c.spec(), "knorm:sinks=4,alloc=uniform,safeguard=0.2,beta=20,budget=32,decode_slack=-1,nc=0,groups=1,"
                      "clip=0,means_only=0");
  EXPECT_EQ(PressConfig::parse(c.spec()), c);
  EXPECT_EQ(c.queries_read(1000), 0);
  EXPECT_EQ(PressConfig::parse("adakv:scorer=knorm", Budget{32, 0.0}).queries_read(1000), 0);
  EXPECT_NE(press_help().find("  knorm "), std::string::npos);
  EXPECT_THROW(PressConfig::parse("knorm:kernel=7"), MkvError);  // it pools nothing
}

TEST(Knorm, ComposesWithTheAllocationsAndNc) {
  for (const char* spec : {"knorm:budget=20,alloc=adaptive", "knorm:budget=20,alloc=global",
                           "knorm:budget=20,alloc=pyramid", "adakv:scorer=knorm,budget=20"}) {
    const KnormRun run(spec);
    int64_t kept = 0;
    for (int layer = 0; layer < kLayers; ++layer)
      for (int h = 0; h < kKvHeads; ++h) kept += int64_t(run.kept(layer, h).size());
    EXPECT_LE(kept, int64_t(20) * kLayers * kKvHeads) << spec;
    EXPECT_GT(kept, 0) << spec;
  }
  const KnormRun plain("knorm:budget=20"), nc("knorm:budget=20,nc=1");
  EXPECT_TRUE(nc.cache.tracks_moments());
  for (int layer = 0; layer < kLayers; ++layer)
    for (int h = 0; h < kKvHeads; ++h) {
      EXPECT_EQ(nc.kept(layer, h), plain.kept(layer, h));
      EXPECT_EQ(nc.cache.head(layer, h).moments->count(), kTokens - 20);
    }
}

}  // namespace
}  // namespace mkv
