// llama-bench-style throughput measurement of a Transformer through the real Session loop:
// prompt processing (ppN: N tokens prefilled in ubatch chunks) and text generation (tgN: N
// single-token decode steps), optionally after `depth` tokens already in the cache (not timed)
// and with a press compressing the cache after that depth prefill. Token ids are random
// (tokenization and sampling are excluded); only wall time of the forward passes is counted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"
#include "model/transformer.h"

namespace mkv {

// What one decode step reads and computes, from the model file.
struct ModelFootprint {
  std::size_t file_bytes = 0;           // size of the GGUF
  int64_t params = 0;                   // all tensor elements
  double weight_bytes_per_token = 0.0;  // matrices read per token (+ one embedding row)
  double matmul_params = 0.0;           // multiply-adds per token in the matrix products
  double output_params = 0.0;           // the part of matmul_params in the output head (vocab x embd)
};
ModelFootprint model_footprint(const GgufFile& file);

struct BenchTest {
  int n_prompt = 0;  // > 0: a ppN test
  int n_gen = 0;     // > 0: a tgN test (exactly one of n_prompt, n_gen is > 0)
  int depth = 0;     // tokens in the cache before the timed part
  std::string name() const;  // "pp512", "tg128", "tg128 @ d4096"
};

struct BenchConfig {
  int repetitions = 5;
  int ubatch = 512;
  KvStorage kv_storage = KvStorage::F32;
  PressConfig press;        // the press and its budget ("full": no press)
  bool fresh_depth = false; // re-prefill the depth before every repetition (llama-bench); else once
                            // (tests at depth 0 start every repetition on an empty cache)
  bool nc_ab = false;       // tg tests with an NC press: each repetition also times NC off on the
                            // same cache (companion "NC off (same cache)")
  bool depth0_ab = false;   // tg tests at depth > 0: each repetition also times the same decode on
                            // a second, full-cache session from depth 0 (companion "depth 0 (same run)")
  uint64_t seed = 1;        // token ids
  // Called (untimed) right before and right after the timed passes of every repetition: the
  // bench command reads its probes there, so that each repetition is compared with the limits
  // measured on both sides of it, seconds apart, on a host that drifts within minutes.
  std::function<void()> around_repetition;
  // Called (untimed) with a one-line account of each long step: the depth prefill before and
  // after it, and every repetition as it starts. Empty: silent.
  std::function<void(const std::string&)> on_progress;
};

inline constexpr const char* kNcOffCompanion = "NC off (same cache)";
inline constexpr const char* kDepth0Companion = "depth 0 (same run)";

struct BenchResult {
  BenchTest test;
  std::vector<double> tokens_per_s;  // one per repetition
  double mean_tps = 0.0, std_tps = 0.0;
  // Companion passes (nc_ab, depth0_ab): timed within every repetition beside the test, in a
  // rotating order, so that their tokens_per_s[i] pair with the test's tokens_per_s[i].
  std::string companion;               // what a companion measured; empty for the test itself
  bool depth0_pass() const { return companion == kDepth0Companion; }
  std::vector<BenchResult> companions;
  double bytes_per_token = 0.0;  // weights + KV rows read per token (average over the test)
  double flops_per_token = 0.0;  // matrix products + attention (average over the test)
  std::size_t kv_row_bytes = 0;  // one token of one KV head: key + value + position
  std::size_t kv_bytes_held = 0; // cache bytes at the end of the last repetition (rows + moments)
  int64_t kv_rows_held = 0;      // rows over all layers and heads at the end
  double depth_prefill_s = 0.0;  // the (untimed) prefill of the depth, its compression pass included
  double depth_compress_s = 0.0; // the press's compression pass after that prefill
  double gbs() const { return bytes_per_token * mean_tps / 1e9; }
  double gflops() const { return flops_per_token * mean_tps / 1e9; }
};

// Share of a limit reached per repetition: the median over i of rates[i] / max(limits[2i],
// limits[2i + 1]), where limits holds the readings taken right before and right after each
// repetition (BenchConfig::around_repetition). 0 when there are no readings.
double paired_fraction(const std::vector<double>& rates, const std::vector<double>& limits_around);

// Mean and sample standard deviation (0 for fewer than two values).
std::pair<double, double> mean_and_std(const std::vector<double>& values);

// Runs one test `config.repetitions` times (after one untimed warm-up pass at a tenth of the size).
BenchResult run_bench(Transformer& model, const ModelFootprint& footprint, const BenchTest& test,
                      const BenchConfig& config);

// Peak resident set size of this process in bytes (getrusage).
std::size_t peak_rss_bytes();

// How the mappings over the address range [begin, begin + size) are held now (a model's
// weights, say): bytes resident, and of those the bytes mapped by 2 MiB pages (Rss, and
// AnonHugePages + FilePmdMapped, of the /proc/self/smaps entries that overlap the range, whole:
// a GGUF's mapping is one entry, a --no-mmap copy one entry rounded up to 2 MiB). Decode reads
// every weight once per token, and 4 KiB pages cost it TLB misses. Zeroes when /proc/self/smaps
// cannot be read.
struct PageResidency {
  std::size_t resident = 0, huge = 0;
};
PageResidency page_residency(const void* begin, std::size_t size);

}  // namespace mkv
