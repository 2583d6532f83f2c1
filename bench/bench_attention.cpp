// Attention and KV-compression costs at the Llama-3.2-1B attention shape (32 query heads, 8 KV
// heads, head dim 64), one layer: decode attention at depths (f32 / f16 cache), the NC blend on
// top of it, prefill attention of a 512-token chunk, and press compression passes (MomentKV vs
// SnapKV): after prefill over a 4096-token cache that observed a 512-token chunk of queries, and
// during decode, evicting 64 decoded rows from a cache at its 1024-row budget.
// Run: build/bench/bench_attention --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <memory>
#include <numeric>
#include <vector>

#include "bench_support.h"
#include "kv/attention.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"

namespace {

using mkv::bench::gaussian;

constexpr int kHeads = 32, kKvHeads = 8, kDim = 64;

// One layer holding `depth` random rows per KV head.
mkv::KvCache filled_cache(int depth, mkv::KvStorage storage, mkv::MomentConfig moments = {}) {
  mkv::KvCache cache({1, kKvHeads, kDim, kDim}, storage, moments);
  constexpr int kChunk = 512;
  std::vector<int32_t> pos(kChunk);
  for (int start = 0; start < depth; start += kChunk) {
    const int n = std::min(kChunk, depth - start);
    std::iota(pos.begin(), pos.begin() + n, start);
    const auto k = gaussian(static_cast<std::size_t>(n) * kKvHeads * kDim, start + 1);
    const auto v = gaussian(static_cast<std::size_t>(n) * kKvHeads * kDim, start + 2);
    cache.append(0, n, k.data(), v.data(), pos.data());
  }
  return cache;
}

void BM_DecodeAttention(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  const auto storage = state.range(1) ? mkv::KvStorage::F16 : mkv::KvStorage::F32;
  const bool nc = state.range(2) != 0;  // 1: one full summary (paper), 2: 16 groups of means (momentkv default)
  mkv::MomentConfig mc;
  mc.track = nc;
  if (state.range(2) == 2) mc.groups = 16, mc.comoment = false;
  mkv::KvCache cache = filled_cache(depth, storage, mc);
  if (nc) {  // evict every other row so that each head carries moments
    std::vector<int32_t> keep;
    for (int i = 0; i < depth; i += 2) keep.push_back(i);
    keep.push_back(depth - 1);
    for (int g = 0; g < kKvHeads; ++g) cache.retain(0, g, keep);
    cache.set_nc(true);
  }
  const auto q = gaussian(kHeads * kDim, 7);
  std::vector<float> out(kHeads * kDim);
  const mkv::AttentionShape shape{kHeads, kDim, kDim, 0.125f};
  for (auto _ : state) {
    mkv::attend_layer(cache, 0, shape, q.data(), 1, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = static_cast<double>(cache.total_tokens()) * 2 * kDim * (state.range(1) ? 2 : 4);
  state.counters["kv_read"] = benchmark::Counter(bytes * state.iterations(), benchmark::Counter::kIsRate,
                                                 benchmark::Counter::kIs1000);
}
// depth, f16, nc (nc rows hold half the depth plus moments; 1 = paper summary, 2 = 16 groups of means)
BENCHMARK(BM_DecodeAttention)
    ->ArgsProduct({{512, 2048, 4096, 8192}, {0, 1}, {0}})
    ->Args({1024, 0, 0})
    ->Args({2048, 0, 1})
    ->Args({2048, 0, 2})
    ->Args({2048, 1, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_PrefillAttention(benchmark::State& state) {
  const int n = 512, depth = static_cast<int>(state.range(0));
  mkv::KvCache cache = filled_cache(depth + n, mkv::KvStorage::F32);
  const auto q = gaussian(static_cast<std::size_t>(n) * kHeads * kDim, 8);
  std::vector<float> out(static_cast<std::size_t>(n) * kHeads * kDim);
  const mkv::AttentionShape shape{kHeads, kDim, kDim, 0.125f};
  for (auto _ : state) {
    mkv::attend_layer(cache, 0, shape, q.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_PrefillAttention)->Arg(0)->Arg(3584)->UseRealTime()->Unit(benchmark::kMillisecond);

// One compression pass of a press over a 4096-row layer (budget 1024) after it observed the
// last 512 queries; the cache is rebuilt outside the timed region for every iteration.
void BM_CompressPass(benchmark::State& state, const char* spec) {
  constexpr int kDepth = 4096, kObserved = 512;
  auto press = mkv::PressConfig::parse(spec, mkv::Budget{1024, 0.0}).make();
  const mkv::PressGeometry geo{1, kHeads, kKvHeads, kDim, kDim, 0.125f};
  const auto q = gaussian(static_cast<std::size_t>(kObserved) * kHeads * kDim, 9);
  std::vector<int32_t> pos(kObserved);
  std::iota(pos.begin(), pos.end(), kDepth - kObserved);
  for (auto _ : state) {
    state.PauseTiming();
    mkv::KvCache cache = filled_cache(kDepth, mkv::KvStorage::F32, press->moment_config());
    cache.set_nc(press->nc());
    press->reset(geo);
    press->observe(0, kObserved, q.data(), pos.data(), cache);
    state.ResumeTiming();
    press->compress(cache, mkv::CompressReason::AfterPrefill);
    benchmark::DoNotOptimize(cache.total_tokens());
  }
}
BENCHMARK_CAPTURE(BM_CompressPass, snapkv, "snapkv")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompressPass, momentkv, "momentkv")->UseRealTime()->Unit(benchmark::kMillisecond);

// One decode-time pass (decode_slack): a layer compressed to its 1024-row budget after a
// 4096-token prefill has decoded 64 more tokens and evicts back to 1024. The compressed cache
// is built once; every iteration copies it and re-observes the last 32 decoded queries outside
// the timed region.
void BM_DecodeCompressPass(benchmark::State& state, const char* spec) {
  constexpr int kDepth = 4096, kDecoded = 64, kWindow = 32;
  auto press = mkv::PressConfig::parse(spec, mkv::Budget{1024, 0.0}).make();
  const mkv::PressGeometry geo{1, kHeads, kKvHeads, kDim, kDim, 0.125f};
  const std::size_t q_row = static_cast<std::size_t>(kHeads) * kDim;  // one token's queries
  const auto q = gaussian((kDepth + kDecoded) * q_row, 9);
  std::vector<int32_t> pos(kDepth + kDecoded);
  std::iota(pos.begin(), pos.end(), 0);
  mkv::KvCache compressed = filled_cache(kDepth, mkv::KvStorage::F32, press->moment_config());
  compressed.set_nc(press->nc());
  press->reset(geo);
  press->observe(0, kWindow, &q[(kDepth - kWindow) * q_row], &pos[kDepth - kWindow], compressed);
  press->compress(compressed, mkv::CompressReason::AfterPrefill);
  const auto k = gaussian(static_cast<std::size_t>(kDecoded) * kKvHeads * kDim, 10);
  const auto v = gaussian(static_cast<std::size_t>(kDecoded) * kKvHeads * kDim, 11);
  compressed.append(0, kDecoded, k.data(), v.data(), &pos[kDepth]);
  const int last = kDepth + kDecoded - kWindow;  // first of the queries the pass observes
  int64_t rows_after = 0;
  for (auto _ : state) {
    state.PauseTiming();
    mkv::KvCache cache = compressed;
    press->reset(geo);
    press->observe(0, kWindow, &q[last * q_row], &pos[last], cache);
    state.ResumeTiming();
    press->compress(cache, mkv::CompressReason::AfterDecodeStep);
    rows_after = cache.total_tokens();
  }
  state.counters["rows_per_head"] = static_cast<double>(rows_after) / kKvHeads;
}
BENCHMARK_CAPTURE(BM_DecodeCompressPass, snapkv, "snapkv:decode_slack=0")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodeCompressPass, momentkv, "momentkv:decode_slack=0")->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
