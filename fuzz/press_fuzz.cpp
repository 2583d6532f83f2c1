// libFuzzer target for press specs and the presses they build: a spec string (the `--press` flag,
// a request's kv_press) must parse or throw MkvError, a parsed spec must round-trip through its
// canonical form, and a press built from it must run a whole sequence on a small cache (prefill
// chunks, compression, decode steps with decode-time eviction, attention with NC over what is
// left) without a crash, a row it never saw, an evicted token missing from the moments, more rows
// than its budget after the prefill, or a non-finite attention output.
// Input: the spec, a newline, then bytes that choose the cache type, the chunk sizes and the data.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz/fuzz_input.h"
#include "kv/attention.h"
#include "kv/press_config.h"

namespace {

std::vector<float> normal(std::mt19937& rng, std::size_t n, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Feeds tokens to the press like a session (append, observe every layer, compress), checking the
// cache after every compression; then a new query's attention over each layer must be finite.
void run_sequence(mkv::Press& press, const mkv::Budget& budget, mkv::fuzz::FuzzInput& in) {
  const mkv::PressGeometry g{/*n_layers=*/2, /*n_heads=*/4, /*n_kv_heads=*/2, /*head_dim_k=*/8,
                             /*head_dim_v=*/8, /*scale=*/0.35355339f};
  press.reset(g);
  const bool f16 = in.byte() & 1;
  mkv::KvCache cache(mkv::KvCacheShape{g.n_layers, g.n_kv_heads, g.head_dim_k, g.head_dim_v},
                     f16 ? mkv::KvStorage::F16 : mkv::KvStorage::F32, press.moment_config());
  cache.set_nc(press.nc());
  std::mt19937 rng(in.byte());
  const float key_scale = float(1 + in.byte() % 8);  // larger keys: peakier attention
  int32_t next = 0;
  const int n_chunks = 1 + in.byte() % 3;
  const int n_decode = in.byte() % 6;
  for (int step = 0; step < n_chunks + n_decode; ++step) {
    const bool decoding = step >= n_chunks;
    const int n = decoding ? 1 : in.in_range(1, 96);
    std::vector<int32_t> positions(n);
    for (int t = 0; t < n; ++t) positions[t] = next++;
    for (int layer = 0; layer < g.n_layers; ++layer) {
      const auto k = normal(rng, std::size_t(n) * g.n_kv_heads * g.head_dim_k, key_scale);
      const auto v = normal(rng, std::size_t(n) * g.n_kv_heads * g.head_dim_v, 1.0f);
      const auto q = normal(rng, std::size_t(n) * g.n_heads * g.head_dim_k, 1.0f);
      cache.append(layer, n, k.data(), v.data(), positions.data());
      press.observe(layer, n, q.data(), positions.data(), cache);
    }
    const bool last_chunk = step == n_chunks - 1;
    press.compress(cache, decoding    ? mkv::CompressReason::AfterDecodeStep
                          : last_chunk ? mkv::CompressReason::AfterPrefill
                                       : mkv::CompressReason::AfterChunk);
    for (int layer = 0; layer < g.n_layers; ++layer)
      for (int h = 0; h < g.n_kv_heads; ++h) {
        const mkv::KvHeadView view = cache.head(layer, h);
        mkv::fuzz::require(view.length >= 0 && view.length <= next, "a head longer than the sequence");
        for (int32_t i = 0; i < view.length; ++i) {
          mkv::fuzz::require(view.positions[i] >= 0 && view.positions[i] < next, "a position never appended");
          mkv::fuzz::require(i == 0 || view.positions[i] > view.positions[i - 1], "positions out of order");
        }
        // Every evicted token is folded into the head's moments.
        if (view.moments)
          mkv::fuzz::require(view.moments->count() + view.length == next, "an evicted token missing from the moments");
      }
    // After the prefill every allocation (uniform, pyramid, adaptive, global) holds its budget in
    // total (a ratio's budget is at least one row), and the cache's memory is its rows'.
    if (last_chunk) {
      const int64_t heads = int64_t(g.n_layers) * g.n_kv_heads;
      const int64_t budget_rows = heads * std::max<int64_t>(budget.resolve(next), 1);
      mkv::fuzz::require(cache.total_tokens() <= budget_rows || cache.total_tokens() == heads * next,
                         "the prefill's compression left more rows than the budget");
    }
    mkv::fuzz::require(cache.token_bytes() == std::size_t(cache.total_tokens()) * cache.row_bytes(),
                       "the cache holds memory for rows it evicted");
  }
  // One query per head over every layer's compressed cache (the latest token must still be there
  // for the causal rule, so only when every head kept it).
  const mkv::AttentionShape shape{g.n_heads, g.head_dim_k, g.head_dim_v, g.scale};
  for (int layer = 0; layer < g.n_layers; ++layer) {
    bool latest_kept = true;
    for (int h = 0; h < g.n_kv_heads; ++h) {
      const mkv::KvHeadView view = cache.head(layer, h);
      latest_kept = latest_kept && view.length > 0 && view.positions[view.length - 1] == next - 1;
    }
    if (!latest_kept) continue;
    const auto q = normal(rng, std::size_t(g.n_heads) * g.head_dim_k, 1.0f);
    std::vector<float> out(std::size_t(g.n_heads) * g.head_dim_v);
    mkv::attend_layer(cache, layer, shape, q.data(), 1, out.data());
    for (const float x : out) mkv::fuzz::require(std::isfinite(x), "a non-finite attention output");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mkv::fuzz::FuzzInput in(data, size);
  const std::string_view spec = in.until('\n');
  try {
    const mkv::PressConfig config = mkv::PressConfig::parse(spec);
    mkv::fuzz::require(mkv::PressConfig::parse(config.spec()) == config, "a spec does not round-trip");
    mkv::fuzz::require(mkv::PressConfig::parse(config.as_given()).as_given() == config.as_given(),
                       "as_given does not round-trip");
    if (config.is_full() || !config.budget()) return 0;
    const auto press = config.make();
    mkv::fuzz::require(press->spec() == config.spec(), "the press's spec is not its config's");
    try {
      run_sequence(*press, *config.budget(), in);
    } catch (const mkv::MkvError& e) {
      // A spec that parses must run: a server would answer this request with a 500.
      fprintf(stderr, "press_fuzz: %s failed while running: %s\n", config.spec().c_str(), e.what());
      abort();
    }
  } catch (const mkv::MkvError&) {
    // A refused spec is an expected outcome.
  }
  return 0;
}
