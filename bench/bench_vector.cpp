// The small per-token kernels around the matrix products, at the Llama-3.2-1B shape (hidden 2048,
// FFN 8192, 32 query heads of 64): norms, SwiGLU, softmax / exp, the attention dot and axpy, RoPE,
// activation quantisation for the integer path, and the row conversions of the weight and KV
// types. Each reports the bytes it reads and writes per second; they are a few percent of a
// decode step, so a regression shows here before it shows in `momentkv bench`.
// Run: build/bench/bench_vector --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "bench_support.h"
#include "ops/matmul_int8.h"
#include "ops/quant.h"
#include "ops/rope.h"
#include "ops/vec.h"

namespace {

using mkv::bench::gaussian;

constexpr int kHidden = 2048, kFfn = 8192, kHeads = 32, kHeadDim = 64;

// Rate counter of `bytes` moved per iteration.
void count_bytes(benchmark::State& state, double bytes) {
  state.counters["bytes"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_RmsNorm(benchmark::State& state) {
  const auto x = gaussian(kHidden, 1), weight = gaussian(kHidden, 2);
  std::vector<float> out(kHidden);
  for (auto _ : state) {
    mkv::rmsnorm(x.data(), weight.data(), kHidden, 1e-5f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  count_bytes(state, 3.0 * kHidden * sizeof(float));
}
BENCHMARK(BM_RmsNorm);

// In place, again and again, with up = 1 + exp(-gate): silu(gate) * up = gate, so the values stay
// put instead of drifting to 0 (and no copy restores them inside the timed loop).
void BM_SwiGlu(benchmark::State& state) {
  auto gate = gaussian(kFfn, 3);
  std::vector<float> up(kFfn);
  for (int i = 0; i < kFfn; ++i) up[i] = 1.0f + std::exp(-gate[i]);
  for (auto _ : state) {
    mkv::swiglu(gate.data(), up.data(), kFfn);
    benchmark::DoNotOptimize(gate.data());
  }
  count_bytes(state, 3.0 * kFfn * sizeof(float));
}
BENCHMARK(BM_SwiGlu);

// Softmax over one head's logits at a depth of n tokens. In place, again and again: the cost does
// not depend on the values, and restoring the input would time a copy (which glibc does slowly
// for these sizes on some hosts).
void BM_Softmax(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto x = gaussian(n, 5);
  for (auto _ : state) {
    mkv::softmax(x.data(), n);
    benchmark::DoNotOptimize(x.data());
  }
  count_bytes(state, 2.0 * n * sizeof(float));
}
BENCHMARK(BM_Softmax)->Arg(1024)->Arg(8192);

// In place as softmax above; the values settle near exp(-4), far from underflow.
void BM_ExpShifted(benchmark::State& state) {
  auto x = gaussian(kFfn, 6);
  for (auto _ : state) benchmark::DoNotOptimize(mkv::vec_exp_shifted(x.data(), kFfn, 4.0f));
  count_bytes(state, 2.0 * kFfn * sizeof(float));
}
BENCHMARK(BM_ExpShifted);

// One query-key dot (n = head dim) and one hidden-size dot.
void BM_Dot(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto a = gaussian(n, 7), b = gaussian(n, 8);
  for (auto _ : state) benchmark::DoNotOptimize(mkv::vec_dot(a.data(), b.data(), n));
  count_bytes(state, 2.0 * n * sizeof(float));
}
BENCHMARK(BM_Dot)->Arg(kHeadDim)->Arg(kHidden);

void BM_Axpy(benchmark::State& state) {
  const auto x = gaussian(kHeadDim, 9);
  std::vector<float> y(kHeadDim);
  for (auto _ : state) {
    mkv::vec_axpy(0.5f, x.data(), y.data(), kHeadDim);
    benchmark::DoNotOptimize(y.data());
  }
  count_bytes(state, 3.0 * kHeadDim * sizeof(float));
}
BENCHMARK(BM_Axpy);

// All query heads of one token rotated to a far position.
void BM_Rope(benchmark::State& state) {
  const mkv::Rope rope(mkv::RopeStyle::Norm, kHeadDim, kHeadDim, 500000.0f, {});
  auto q = gaussian(kHeads * kHeadDim, 10);
  int32_t pos = 4096;
  for (auto _ : state) {
    rope.apply(q.data(), kHeads, pos++);
    benchmark::DoNotOptimize(q.data());
  }
  count_bytes(state, 2.0 * kHeads * kHeadDim * sizeof(float));
}
BENCHMARK(BM_Rope);

// The integer path's activation quantisation, once per product (hidden and FFN inputs).
void BM_QuantizeActivations(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto x = gaussian(n, 11);
  std::vector<mkv::ActBlockQ8> blocks(n / 32);
  for (auto _ : state) {
    mkv::quantize_activations_q8(x.data(), n, blocks.data());
    benchmark::DoNotOptimize(blocks.data());
  }
  count_bytes(state, static_cast<double>(n) * sizeof(float));
}
BENCHMARK(BM_QuantizeActivations)->Arg(kHidden)->Arg(kFfn);

// Row conversions: float32 to the type (F16: appending to an f16 KV cache; Q8_0: quantising) and
// back (reading an f16 cache row, embedding lookups).
void BM_RowConversion(benchmark::State& state, mkv::GgmlType type, bool to_float) {
  const auto x = gaussian(kHidden, 12);
  std::vector<uint8_t> row(mkv::ggml_row_bytes(type, kHidden));
  mkv::quantize_row(type, x.data(), row.data(), kHidden);
  std::vector<float> back(kHidden);
  for (auto _ : state) {
    if (to_float)
      mkv::dequantize_row(type, row.data(), back.data(), kHidden);
    else
      mkv::quantize_row(type, x.data(), row.data(), kHidden);
    benchmark::DoNotOptimize(row.data());
    benchmark::DoNotOptimize(back.data());
  }
  count_bytes(state, static_cast<double>(row.size()) + kHidden * sizeof(float));
}
BENCHMARK_CAPTURE(BM_RowConversion, to_f16, mkv::GgmlType::F16, false);
BENCHMARK_CAPTURE(BM_RowConversion, from_f16, mkv::GgmlType::F16, true);
BENCHMARK_CAPTURE(BM_RowConversion, to_q8_0, mkv::GgmlType::Q8_0, false);
BENCHMARK_CAPTURE(BM_RowConversion, from_q8_0, mkv::GgmlType::Q8_0, true);

}  // namespace
