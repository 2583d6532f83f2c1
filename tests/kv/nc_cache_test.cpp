// NC through the cache and attend_layer: evicting rows with identical keys and attending with
// NC on reproduces full attention over all rows (docs/METHODS.md §3), for every query head (GQA).
#include <gtest/gtest.h>

#include "kv/attention.h"
#include "kv/kv_cache.h"
#include "kv/reference.h"

namespace mkv {
namespace {

TEST(NcCache, EvictedIdenticalKeysGiveFullAttention) {
  constexpr int kD = 8, kHeads = 2, kOld = 30, kEvicted = 20;
  const float scale = 1.0f / std::sqrt(float(kD));
  std::mt19937 rng(12);
  std::vector<float> keys = test::normal_vector(rng, (kOld + 1) * kD), values = test::normal_vector(rng, (kOld + 1) * kD);
  const std::vector<float> k0 = test::normal_vector(rng, kD);
  for (int i = 0; i < kEvicted; ++i) std::copy(k0.begin(), k0.end(), &keys[i * kD]);

  KvCache cache(KvCacheShape{1, 1, kD, kD}, KvStorage::F32, MomentConfig{.track = true});
  cache.set_nc(true);
  std::vector<int32_t> positions(kOld + 1);
  for (int i = 0; i <= kOld; ++i) positions[i] = i;
  cache.append(0, kOld, keys.data(), values.data(), positions.data());
  std::vector<int32_t> keep;
  for (int i = kEvicted; i < kOld; ++i) keep.push_back(i);
  cache.retain(0, 0, keep);
  cache.append(0, 1, &keys[kOld * kD], &values[kOld * kD], &positions[kOld]);

  const std::vector<float> q = test::normal_vector(rng, kHeads * kD, 0.0f, 2.0f);  // (1, heads, d)
  std::vector<float> out(kHeads * kD);
  attend_layer(cache, 0, AttentionShape{kHeads, kD, kD, scale}, q.data(), 1, out.data());
  for (int h = 0; h < kHeads; ++h) {
    std::vector<double> full;
    test::attention_f64(std::vector<float>(q.begin() + h * kD, q.begin() + (h + 1) * kD), keys, values, kD, kD, scale, full);
    for (int b = 0; b < kD; ++b) EXPECT_NEAR(out[h * kD + b], full[b], 2e-5) << "head " << h;
  }
  cache.set_nc(false);  // without NC the evicted mass is simply lost
  attend_layer(cache, 0, AttentionShape{kHeads, kD, kD, scale}, q.data(), 1, out.data());
  std::vector<double> full;
  test::attention_f64(std::vector<float>(q.begin(), q.begin() + kD), keys, values, kD, kD, scale, full);
  double diff = 0.0;
  for (int b = 0; b < kD; ++b) diff = std::max(diff, std::abs(out[b] - full[b]));
  EXPECT_GT(diff, 1e-3);
}

}  // namespace
}  // namespace mkv
