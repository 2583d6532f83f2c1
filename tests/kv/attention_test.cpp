// attend_layer against float64 softmax attention over the rows the cache holds: every GQA group
// size up to 8 (queries per item from 1 to 128, so the row-blocked logits kernel and the GEMM,
// every tile shape of the weighted sum, and their last partial tiles), decode and causal prefill
// batches (over one item of 16 tokens), row counts that are not multiples of any tile and caches
// longer than one chunk of the online softmax (where some of a batch's queries see none of the
// last chunk), float32 and fp16 storage, and head sizes with and without the vector kernels
// (dim % 8). Every kernel variant the host runs (MOMENTKV_CPU) is checked.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <tuple>

#include "kv/attention.h"
#include "kv/kv_cache.h"
#include "kv/reference.h"
#include "ops/ops_test_util.h"

namespace mkv {
namespace {

// dim, group (query heads per KV head), tokens in the batch, rows already cached, fp16 storage
using Case = std::tuple<int, int, int, int, bool>;

class AttentionVsFloat64 : public testing::TestWithParam<Case> {};

TEST_P(AttentionVsFloat64, MatchesExactSoftmaxOverVisibleRows) {
  const auto [dim, group, n_tokens, depth, f16] = GetParam();
  constexpr int kKvHeads = 2;
  const int n_heads = kKvHeads * group;
  const float scale = 1.0f / std::sqrt(float(dim));
  std::mt19937 rng(dim * 1000 + group * 100 + n_tokens + depth);
  KvCache cache(KvCacheShape{1, kKvHeads, dim, dim}, f16 ? KvStorage::F16 : KvStorage::F32);
  const int total = depth + n_tokens;
  const auto k = test::normal_vector(rng, std::size_t(total) * kKvHeads * dim);
  const auto v = test::normal_vector(rng, std::size_t(total) * kKvHeads * dim);
  std::vector<int32_t> positions(total);
  std::iota(positions.begin(), positions.end(), 0);
  const std::size_t row = std::size_t(kKvHeads) * dim;  // one token of k or v
  if (depth > 0) cache.append(0, depth, k.data(), v.data(), positions.data());
  cache.append(0, n_tokens, k.data() + depth * row, v.data() + depth * row, positions.data() + depth);

  // Queries large enough that the softmax is far from uniform (a wrong row shows).
  const auto q = test::normal_vector(rng, std::size_t(n_tokens) * n_heads * dim, 0.0f, 2.0f);
  std::vector<std::vector<float>> outs;  // one per kernel variant
  std::vector<std::string> variants;
  for (CpuVariant variant : available_cpu_variants()) {
    test::CpuVariantGuard guard(variant);
    outs.emplace_back(std::size_t(n_tokens) * n_heads * dim);
    attend_layer(cache, 0, AttentionShape{n_heads, dim, dim, scale}, q.data(), n_tokens, outs.back().data());
    variants.emplace_back(cpu_variant_name(variant));
  }

  for (int g = 0; g < kKvHeads; ++g) {
    const KvHeadView head = cache.head(0, g);
    std::vector<float> keys(std::size_t(total) * dim), values(std::size_t(total) * dim);  // as stored
    for (int i = 0; i < total; ++i) head.key(i, &keys[std::size_t(i) * dim]), head.value(i, &values[std::size_t(i) * dim]);
    for (int t = 0; t < n_tokens; ++t) {
      const std::size_t visible = std::size_t(depth + t + 1) * dim;
      const std::vector<float> seen_k(keys.begin(), keys.begin() + visible), seen_v(values.begin(), values.begin() + visible);
      for (int j = 0; j < group; ++j) {
        const std::size_t qh = (std::size_t(t) * n_heads + g * group + j) * dim;
        std::vector<double> want;
        test::attention_f64(std::vector<float>(q.begin() + qh, q.begin() + qh + dim), seen_k, seen_v, dim, dim, scale, want);
        for (std::size_t v = 0; v < outs.size(); ++v)
          for (int c = 0; c < dim; ++c)
            ASSERT_NEAR(outs[v][qh + c], want[c], 2e-5) << variants[v] << " kernels, token " << t << " kv head " << g
                                                        << " query " << j << " column " << c;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Decode, AttentionVsFloat64,
                         testing::Combine(testing::Values(64, 12), testing::Values(1, 2, 3, 4, 5, 8),
                                          testing::Values(1), testing::Values(0, 37, 300, 1100),
                                          testing::Bool()));
INSTANTIATE_TEST_SUITE_P(Prefill, AttentionVsFloat64,
                         testing::Combine(testing::Values(64, 16), testing::Values(1, 3, 4, 8),
                                          testing::Values(7, 21), testing::Values(0, 45, 500), testing::Bool()));

}  // namespace
}  // namespace mkv
