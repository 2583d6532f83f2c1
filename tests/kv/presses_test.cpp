// Every scorer press × allocation × budget on a real KvCache: the kept rows are exactly the top
// scores with sinks and window protected (kvpress's parametrised test), budgets hold, memory
// shrinks, moments see every evicted token, decode-time eviction stays within budget + slack.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kv/press_config.h"
#include "kv/presses/nc_press.h"
#include "kv/presses/scorer_press.h"
#include "kv/presses/snapkv.h"
#include "kv/reference.h"

namespace mkv {
namespace {

const PressGeometry kGeometry{/*n_layers=*/3, /*n_heads=*/4, /*n_kv_heads=*/2, /*head_dim_k=*/8,
                              /*head_dim_v=*/8, /*scale=*/0.35355339f};
constexpr int kPrompt = 120;

// Prefills kPrompt random tokens in two chunks, observing every layer like the session does.
struct PressRun {
  std::unique_ptr<Press> press;
  KvCache cache;
  std::mt19937 rng{42};
  int32_t next = 0;

  explicit PressRun(const std::string& spec)
      : press(PressConfig::parse(spec).make()),
        cache(KvCacheShape{kGeometry.n_layers, kGeometry.n_kv_heads, kGeometry.head_dim_k, kGeometry.head_dim_v},
              KvStorage::F32, press->moment_config()) {
    press->reset(kGeometry);
    cache.set_nc(press->nc());
  }
  void feed(int n) {
    std::vector<int32_t> positions(n);
    for (int t = 0; t < n; ++t) positions[t] = next++;
    for (int layer = 0; layer < kGeometry.n_layers; ++layer) {
      const auto k = test::normal_vector(rng, std::size_t(n) * kGeometry.n_kv_heads * kGeometry.head_dim_k);
      const auto v = test::normal_vector(rng, std::size_t(n) * kGeometry.n_kv_heads * kGeometry.head_dim_v);
      const auto q = test::normal_vector(rng, std::size_t(n) * kGeometry.n_heads * kGeometry.head_dim_k, 0.0f, 2.0f);
      cache.append(layer, n, k.data(), v.data(), positions.data());
      press->observe(layer, n, q.data(), positions.data(), cache);
    }
  }
  void prefill() {
    feed(kPrompt - 40);
    feed(40);
  }
  std::vector<int32_t> positions(int layer, int h) const {
    const KvHeadView view = cache.head(layer, h);
    return {view.positions, view.positions + view.length};
  }
};

// The top-n_keep reference over plain scores (score desc, then the more recent row).
std::vector<int32_t> reference_positions(const std::vector<float>& scores, const std::vector<int32_t>& positions,
                                         int32_t n_keep, const Protection& p) {
  const int32_t n = int32_t(scores.size());
  if (n <= n_keep) return positions;
  std::vector<int32_t> keep, rest;
  for (int32_t i = 0; i < n; ++i) (i < p.sinks || i >= n - p.window ? keep : rest).push_back(i);
  std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a > b;
  });
  keep.insert(keep.end(), rest.begin(), rest.begin() + (n_keep - int32_t(keep.size())));
  std::sort(keep.begin(), keep.end());
  for (int32_t& i : keep) i = positions[i];
  return keep;
}

struct PressCase {
  std::string spec;
  int32_t budget;
};

class EveryPress : public ::testing::TestWithParam<PressCase> {};

TEST_P(EveryPress, KeepsExactlyTheTopScoresWithSinksAndWindow) {
  const PressCase c = GetParam();
  PressRun run(c.spec + (c.spec.find(':') == std::string::npos ? ":" : ",") + "budget=" + std::to_string(c.budget));
  // The ScorerPress inside the NC wrapper, when the spec turns NC on.
  auto* nc = dynamic_cast<NcPress*>(run.press.get());
  auto& press = dynamic_cast<ScorerPress&>(nc ? nc->inner() : *run.press);
  const Allocation allocation = PressConfig::parse(c.spec).allocation();
  run.prefill();
  // Expected rows per layer/head from the scores of the uncompressed cache (one round).
  HeadScores scores;  // (layers × heads, rows)
  for (int layer = 0; layer < kGeometry.n_layers; ++layer) {
    HeadScores layer_scores;
    press.score_layer(run.cache, layer, layer_scores);
    for (auto& head : layer_scores) scores.push_back(std::move(head));
  }
  const std::vector<int32_t> finals = press.final_keeps(run.cache, scores);
  std::vector<std::vector<int32_t>> expected;
  std::vector<Protection> protections;  // (layers × heads) the clamped protection of each head
  for (int layer = 0, i = 0; layer < kGeometry.n_layers; ++layer)
    for (int h = 0; h < kGeometry.n_kv_heads; ++h, ++i) {
      // Protection is clamped to the layer's budget (PyramidKV: its layer budget).
      const bool pyramid = allocation == Allocation::Pyramid;
      const Protection p = clamp_protection(press.options().protection, pyramid ? finals[i] : c.budget);
      expected.push_back(reference_positions(scores[i], run.positions(layer, h), finals[i], p));
      protections.push_back(p);
    }
  run.press->compress(run.cache, CompressReason::AfterPrefill);
  int64_t kept = 0;
  for (int layer = 0, i = 0; layer < kGeometry.n_layers; ++layer)
    for (int h = 0; h < kGeometry.n_kv_heads; ++h, ++i) {
      const auto got = run.positions(layer, h);
      EXPECT_EQ(got, expected[i]) << c.spec << " layer " << layer << " head " << h;
      const Protection& p = protections[i];
      for (int s = 0; s < p.sinks; ++s) EXPECT_EQ(got[s], s);  // sinks kept
      if (c.budget < kPrompt && allocation == Allocation::Uniform) {
        EXPECT_EQ(int32_t(got.size()), c.budget);
      }
      // The window's newest row is kept (a PyramidKV layer budget of 1 keeps its sink instead).
      if (p.window > 0) {
        EXPECT_EQ(got.back(), kPrompt - 1);
      }
      kept += int64_t(got.size());
      if (run.cache.tracks_moments()) {
        EXPECT_EQ(run.cache.head(layer, h).moments->count(), kPrompt - int64_t(got.size()));
      }
    }
  const Allocation alloc = allocation;
  if ((alloc == Allocation::Adaptive || alloc == Allocation::Global) && c.budget < kPrompt) {
    EXPECT_EQ(kept, int64_t(c.budget) * kGeometry.n_layers * kGeometry.n_kv_heads);
  }
  EXPECT_EQ(run.cache.token_bytes(), std::size_t(kept) * run.cache.row_bytes());  // memory really shrinks
}

std::vector<PressCase> press_cases() {
  const std::vector<std::string> specs = {
      "streaming_llm", "h2o", "snapkv", "pyramidkv", "momentkv:rounds=1", "momentkv:rounds=1,alloc=adaptive",
      "adakv:scorer=snapkv", "adakv:scorer=h2o", "momentkv:alloc=adaptive,rounds=1,nc=0", "snapkv:nc=1", "adakv:nc=1",
      "momentkv:rounds=1,nc=0", "h2o:window=8,sinks=0", "snapkv:kernel=1,window=16", "momentkv:rounds=1,kernel=9",
      "pyramidkv:kernel=3", "adakv:alloc=global"};
  std::vector<PressCase> cases;
  for (const std::string& s : specs)
    for (int32_t budget : {16, 48, 100, 120, 500}) cases.push_back({s, budget});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Specs, EveryPress, ::testing::ValuesIn(press_cases()),
                         [](const auto& info) {
                           std::string name = info.param.spec + "_L" + std::to_string(info.param.budget);
                           for (char& ch : name) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(Presses, PoolingKernelFollowsTheBudget) {
  EXPECT_EQ(pooling_kernel(1), 7);
  EXPECT_EQ(pooling_kernel(16), 7);
  EXPECT_EQ(pooling_kernel(32), 11);
  EXPECT_EQ(pooling_kernel(48), 17);
  EXPECT_EQ(pooling_kernel(64), 21);
  EXPECT_EQ(pooling_kernel(96), 31);
  EXPECT_EQ(pooling_kernel(128), 31);
  EXPECT_EQ(pooling_kernel(1'000'000'000), 31);
  for (int32_t budget = 1; budget < 300; ++budget) EXPECT_EQ(pooling_kernel(budget) % 2, 1) << budget;
}

// `spec` with key=auto (its default) keeps the rows of spec + ",key=value" and not all those of
// spec + ",key=other".
void expect_auto_is(const std::string& spec, const std::string& key, int value, int other) {
  PressRun automatic(spec);
  PressRun fixed(spec + "," + key + "=" + std::to_string(value));
  PressRun different(spec + "," + key + "=" + std::to_string(other));
  for (PressRun* run : {&automatic, &fixed, &different}) {
    run->prefill();
    run->press->compress(run->cache, CompressReason::AfterPrefill);
  }
  bool differs_from_other = false;
  for (int layer = 0; layer < kGeometry.n_layers; ++layer)
    for (int h = 0; h < kGeometry.n_kv_heads; ++h) {
      EXPECT_EQ(automatic.positions(layer, h), fixed.positions(layer, h)) << spec;
      differs_from_other |= automatic.positions(layer, h) != different.positions(layer, h);
    }
  EXPECT_TRUE(differs_from_other) << spec << ": the " << key << " should matter here";
}

// kernel=auto keeps the rows of the explicit kernel its budget gives, for token and ratio budgets.
TEST(Presses, AutoKernelIsTheBudgetsKernel) {
  for (const auto& [budget_spec, budget] : std::vector<std::pair<std::string, int32_t>>{
           {"budget=48", 48}, {"budget=100", 100}, {"ratio=0.5", kPrompt / 2}})
    for (const std::string press : {"snapkv:", "momentkv:rounds=1,", "adakv:"})
      expect_auto_is(press + budget_spec, "kernel", pooling_kernel(budget), pooling_kernel(budget) + 8);
}

// window=auto (the default) keeps the rows of the explicit window its budget gives: the scorers
// observe that many queries and protect that many recent rows, and PyramidKV's layer budgets use it.
// The window follows each layer's budget, as kernel=auto does; PyramidKV's layer budgets here
// (at most 117) all have window 1.
TEST(Presses, AutoWindowIsTheBudgetsWindow) {
  for (const auto& [budget_spec, budget] : std::vector<std::pair<std::string, int32_t>>{
           {"budget=24", 24}, {"budget=100", 100}, {"ratio=0.5", kPrompt / 2}})
    for (const std::string press : {"snapkv", "momentkv", "adakv", "pyramidkv", "h2o"})
      expect_auto_is(press + ":" + budget_spec, "window", observation_window(budget), observation_window(budget) + 16);
}

TEST(Presses, BudgetAtLeastTheLengthEvictsNothing) {
  for (const char* spec : {"full", "streaming_llm", "h2o", "snapkv", "pyramidkv", "adakv", "momentkv"}) {
    PressRun run(std::string(spec) == "full" ? std::string(spec) : std::string(spec) + ":budget=120");
    run.prefill();
    run.press->compress(run.cache, CompressReason::AfterPrefill);
    EXPECT_EQ(run.cache.total_tokens(), int64_t(kPrompt) * kGeometry.n_layers * kGeometry.n_kv_heads) << spec;
  }
}

TEST(Presses, MomentKvRoundsReachTheBudgetAndFoldEveryEvictedToken) {
  PressRun run("momentkv:budget=40,rounds=4,variant=paper,alloc=uniform");
  ASSERT_TRUE(run.press->wants_moments());
  ASSERT_TRUE(run.press->nc());
  run.prefill();
  run.press->compress(run.cache, CompressReason::AfterPrefill);
  for (int layer = 0; layer < kGeometry.n_layers; ++layer)
    for (int h = 0; h < kGeometry.n_kv_heads; ++h) {
      EXPECT_EQ(run.cache.length(layer, h), 40);
      EXPECT_EQ(run.cache.head(layer, h).moments->count(), kPrompt - 40);
    }
  EXPECT_EQ(run.cache.moment_bytes(),
            std::size_t(kGeometry.n_layers * kGeometry.n_kv_heads) * (8 * 8 + 8 + 8 + 1) * sizeof(float));
}

TEST(Presses, DefaultMomentKvKeepsTwoGroupsOfMeansAndSharesTheBudgetOverAllLayers) {
  PressRun run("momentkv:budget=40");
  run.prefill();
  run.press->compress(run.cache, CompressReason::AfterPrefill);
  int32_t rows = 0;
  bool layers_differ = false;
  for (int layer = 0; layer < kGeometry.n_layers; ++layer) {
    int32_t layer_rows = 0;
    for (int h = 0; h < kGeometry.n_kv_heads; ++h) layer_rows += run.cache.length(layer, h);
    layers_differ |= layer_rows != 40 * kGeometry.n_kv_heads;
    rows += layer_rows;
  }
  EXPECT_EQ(rows, 40 * kGeometry.n_kv_heads * kGeometry.n_layers);  // global: the model holds layers × heads × L
  EXPECT_TRUE(layers_differ) << "alloc=global should give the layers different budgets here";
  // 2 groups × (key mean 8 + value mean 8 + count 1) numbers per head.
  EXPECT_EQ(run.cache.moment_bytes(), std::size_t(kGeometry.n_layers * kGeometry.n_kv_heads) * 2 * (8 + 8 + 1) * sizeof(float));
}

TEST(Presses, RatioBudgetKeepsTheKvpressCount) {
  PressRun run("snapkv:ratio=0.75");
  run.prefill();
  run.press->compress(run.cache, CompressReason::AfterPrefill);
  EXPECT_EQ(run.cache.length(0, 0), 30);  // int(120 · 0.25)
}

TEST(Presses, DecodeSlackEvictsAgainOnlyPastBudgetPlusSlack) {
  PressRun run("h2o:budget=40,decode_slack=5");
  run.prefill();
  run.press->compress(run.cache, CompressReason::AfterPrefill);
  for (int step = 0; step < 20; ++step) {
    run.feed(1);
    run.press->compress(run.cache, CompressReason::AfterDecodeStep);
    const int32_t length = run.cache.length(1, 1);
    EXPECT_LE(length, 45);
    EXPECT_EQ(length, 40 + (step + 1) % 6) << "step " << step;  // grows to L + S, then back to L
  }
  PressRun plain("snapkv:budget=40");  // no decode_slack: decoding never evicts
  plain.prefill();
  plain.press->compress(plain.cache, CompressReason::AfterPrefill);
  plain.feed(3);
  plain.press->compress(plain.cache, CompressReason::AfterDecodeStep);
  EXPECT_EQ(plain.cache.length(0, 0), 43);
}

TEST(Presses, SnapKvScoresTheLastWindowWhetherQueriesCameInOneChunkOrOneByOne) {
  // Decode steps observe one query at a time; the scores must only depend on the last window.
  constexpr int kTokens = 100, kWindow = 32;
  KvCache cache(KvCacheShape{1, kGeometry.n_kv_heads, kGeometry.head_dim_k, kGeometry.head_dim_v}, KvStorage::F32);
  std::mt19937 rng(7);
  std::vector<int32_t> positions(kTokens);
  for (int t = 0; t < kTokens; ++t) positions[t] = t;
  const auto k = test::normal_vector(rng, std::size_t(kTokens) * kGeometry.n_kv_heads * kGeometry.head_dim_k);
  const auto v = test::normal_vector(rng, std::size_t(kTokens) * kGeometry.n_kv_heads * kGeometry.head_dim_v);
  const auto q = test::normal_vector(rng, std::size_t(kTokens) * kGeometry.n_heads * kGeometry.head_dim_k);
  cache.append(0, kTokens, k.data(), v.data(), positions.data());
  PressGeometry geometry = kGeometry;
  geometry.n_layers = 1;
  SnapKVScorer chunk(kWindow, 7), steps(kWindow, 7);
  chunk.reset(geometry);
  steps.reset(geometry);
  chunk.observe(0, kTokens, q.data(), positions.data(), cache);
  const std::size_t row = std::size_t(kGeometry.n_heads) * kGeometry.head_dim_k;
  for (int t = 0; t < kTokens; ++t) steps.observe(0, 1, q.data() + t * row, &positions[t], cache);
  HeadScores a, b;
  chunk.score(cache, 0, a);
  steps.score(cache, 0, b);
  EXPECT_EQ(a, b);
  // And they are not the scores of a window that includes older queries.
  SnapKVScorer wide(2 * kWindow, 7);
  wide.reset(geometry);
  wide.observe(0, kTokens, q.data(), positions.data(), cache);
  HeadScores c;
  wide.score(cache, 0, c);
  EXPECT_NE(a, c);
}

TEST(Presses, ChunkedPrefillBoundsThePeakLength) {
  PressRun run("momentkv:budget=32,alloc=uniform");
  int32_t peak = 0;
  for (int chunk = 0; chunk < 6; ++chunk) {
    run.feed(20);
    peak = std::max(peak, run.cache.max_length());
    run.press->compress(run.cache, CompressReason::AfterChunk);
    EXPECT_LE(run.cache.max_length(), 32);
  }
  EXPECT_LE(peak, 32 + 20);
  EXPECT_EQ(run.cache.head(2, 1).moments->count(), 120 - 32);
}

TEST(Presses, NcSwitchesAndMomentNeeds) {
  EXPECT_FALSE(PressConfig::parse("snapkv", Budget{64, 0.0}).make()->wants_moments());
  EXPECT_TRUE(PressConfig::parse("snapkv:nc=1", Budget{64, 0.0}).make()->nc());
  EXPECT_TRUE(PressConfig::parse("snapkv:nc=1", Budget{64, 0.0}).make()->wants_moments());
  auto mi = PressConfig::parse("momentkv:nc=0", Budget{64, 0.0}).make();
  EXPECT_FALSE(mi->nc());
  EXPECT_TRUE(mi->wants_moments());  // MI's scores read the moments
  EXPECT_EQ(PressConfig::parse("momentkv:variant=grouped", Budget{64, 0.0}).make()->moment_config().groups, 16);
  EXPECT_EQ(PressConfig::parse("momentkv:variant=grouped", Budget{64, 0.0}).make()->moment_numbers_per_head(kGeometry), 16 * (64 + 8 + 8 + 2));
  EXPECT_DOUBLE_EQ(PressConfig::parse("snapkv:nc=1,groups=16,means_only=1", Budget{64, 0.0}).make()->moment_token_equivalents(kGeometry), 16 * 17 / 16.0);
}

}  // namespace
}  // namespace mkv
