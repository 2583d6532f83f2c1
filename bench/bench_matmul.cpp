// matmul throughput at the Llama-3.2-1B FFN down shape (2048 x 8192 weights): the decode GEMV
// (n_tokens = 1: weight bytes read per second) and prefill (n_tokens = 64 = one work item, and
// 512 = one ubatch: FLOP/s); BM_MatmulFastShortRows: the decode GEMV at the gate/up shape (8192 x
// 2048, as most of the model's matrices 2048 columns per row), where per-row costs count four times
// as much. Rates use real time, so run on an idle machine (OMP_NUM_THREADS sets the threads).
// Run: build/bench/bench_matmul --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/matmul.h"
#include "ops/matmul_int8.h"
#include "ops/quant.h"

namespace {

constexpr int64_t kRows = 2048, kCols = 8192;

// A random rows x cols weight matrix in `type` (each encoded row reused for all rows: the kernel's
// cost does not depend on values) and activations for `n_tokens`.
struct Problem {
  std::vector<uint8_t> weights;
  std::vector<float> x, y;
  mkv::WeightMatrix w;

  Problem(mkv::GgmlType type, int64_t n_tokens, int64_t rows = kRows, int64_t cols = kCols) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist;
    std::vector<float> row(cols);
    for (auto& v : row) v = dist(rng);
    const std::size_t row_bytes = mkv::ggml_row_bytes(type, cols);
    weights.resize(row_bytes * rows);
    mkv::quantize_row(type, row.data(), weights.data(), cols);
    for (int64_t r = 1; r < rows; ++r) std::copy_n(weights.begin(), row_bytes, weights.begin() + r * row_bytes);
    x.resize(n_tokens * cols);
    for (auto& v : x) v = dist(rng);
    y.resize(n_tokens * rows);
    w = {type, weights.data(), rows, cols};
  }
};

void run_matmul(benchmark::State& state, mkv::GgmlType type, int64_t rows, int64_t cols) {
  const int64_t n_tokens = state.range(0);
  Problem p(type, n_tokens, rows, cols);
  for (auto _ : state) {
    mkv::matmul(p.w, p.x.data(), n_tokens, p.y.data());
    benchmark::DoNotOptimize(p.y.data());
  }
  const double calls = static_cast<double>(state.iterations());
  // Printed as rates with SI prefixes: "weights" in bytes/s (e.g. 18G/s), "flops" in FLOP/s.
  state.counters["weights"] = benchmark::Counter(calls * static_cast<double>(p.weights.size()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.counters["flops"] = benchmark::Counter(calls * 2.0 * rows * cols * static_cast<double>(n_tokens),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_Matmul(benchmark::State& state, mkv::GgmlType type) { run_matmul(state, type, kRows, kCols); }

// The same products in MatmulPrecision::Fast: 8-bit activations for the integer-path types, fp16
// ones for F16 decode, bf16 ones for BF16 (prefill: the vdpbf16ps GEMM on AVX512_BF16 hosts).
void BM_MatmulFast(benchmark::State& state, mkv::GgmlType type) {
  mkv::set_matmul_precision(mkv::MatmulPrecision::Fast);
  run_matmul(state, type, kRows, kCols);
  mkv::set_matmul_precision(mkv::MatmulPrecision::Exact);
}
void BM_MatmulFastShortRows(benchmark::State& state, mkv::GgmlType type) {
  mkv::set_matmul_precision(mkv::MatmulPrecision::Fast);
  run_matmul(state, type, kCols, kRows);
  mkv::set_matmul_precision(mkv::MatmulPrecision::Exact);
}

#define MKV_MATMUL_FAST_BENCH(type)                                                                                \
  BENCHMARK_CAPTURE(BM_MatmulFast, type, mkv::GgmlType::type)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_MatmulFastShortRows, type, mkv::GgmlType::type)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond)

MKV_MATMUL_FAST_BENCH(Q8_0);
MKV_MATMUL_FAST_BENCH(Q4_0);
MKV_MATMUL_FAST_BENCH(Q4_1);
MKV_MATMUL_FAST_BENCH(Q5_0);
MKV_MATMUL_FAST_BENCH(Q5_1);
MKV_MATMUL_FAST_BENCH(Q4_K);
MKV_MATMUL_FAST_BENCH(Q6_K);
MKV_MATMUL_FAST_BENCH(F16);
MKV_MATMUL_FAST_BENCH(BF16);
// Prefill-sized products in Fast precision: the integer GEMMs (Q8_0, Q4_0, Q4_K) and the bf16 GEMM.
BENCHMARK_CAPTURE(BM_MatmulFast, Q8_0, mkv::GgmlType::Q8_0)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulFast, Q4_0, mkv::GgmlType::Q4_0)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulFast, Q4_K, mkv::GgmlType::Q4_K)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulFast, BF16, mkv::GgmlType::BF16)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);

#define MKV_MATMUL_BENCH(type) \
  BENCHMARK_CAPTURE(BM_Matmul, type, mkv::GgmlType::type)->Arg(1)->Arg(64)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond)

MKV_MATMUL_BENCH(Q8_0);
MKV_MATMUL_BENCH(F16);
MKV_MATMUL_BENCH(Q4_K);
MKV_MATMUL_BENCH(F32);
MKV_MATMUL_BENCH(Q6_K);
MKV_MATMUL_BENCH(BF16);
MKV_MATMUL_BENCH(Q4_0);
MKV_MATMUL_BENCH(Q4_1);
MKV_MATMUL_BENCH(Q5_0);
MKV_MATMUL_BENCH(Q5_1);
MKV_MATMUL_BENCH(Q5_K);

}  // namespace
