// What `momentkv bench` counts per token: the output head is one product per generated token but
// only one row per prompt micro-batch, for tied and untied classifiers alike. And how a rate is
// set against the limits read around each repetition.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

#include "core/error.h"
#include "engine/bench.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"
#include "support/test_support.h"

namespace mkv {
namespace {

class BenchAccounting : public ::testing::TestWithParam<bool> {};

// A default random model, written to `name` in the test directory and loaded for benches.
struct RandomBenchModel {
  GgufFile file;
  Transformer model;
  explicit RandomBenchModel(const std::string& name) : file(written(name)), model(file, 64) {}

 private:
  static GgufFile written(const std::string& name) {
    const auto path = (test::temp_dir() / name).string();
    write_random_model(RandomModelSpec{}, path);
    return GgufFile::open(path);
  }
};

TEST_P(BenchAccounting, OutputHeadCountsOncePerMicroBatchInPrefill) {
  RandomModelSpec spec;
  spec.n_vocab = 4096;  // the output head dominates the products, as in real models
  spec.tied_output = GetParam();
  const auto path = (test::temp_dir() / "bench_accounting.gguf").string();
  write_random_model(spec, path);
  const GgufFile file = GgufFile::open(path);
  const ModelFootprint fp = model_footprint(file);
  EXPECT_DOUBLE_EQ(fp.output_params, double(spec.n_vocab) * spec.n_embd);
  const double layer_params = double(spec.n_layers) * spec.n_embd *
                              (2.0 * spec.n_heads * spec.head_dim + 2.0 * spec.n_kv_heads * spec.head_dim + 3.0 * spec.n_ff);
  EXPECT_DOUBLE_EQ(fp.matmul_params, layer_params + fp.output_params);

  Transformer model(file, 64);
  BenchConfig config;
  config.repetitions = 1;
  config.ubatch = 8;
  const BenchResult pp = run_bench(model, fp, {.n_prompt = 16}, config);
  const BenchResult tg = run_bench(model, fp, {.n_gen = 4}, config);
  // Attention adds at most 2 x 16 positions x heads x (dk + dv) per layer.
  const double attention_bound = 2.0 * 16 * spec.n_heads * 2 * spec.head_dim * spec.n_layers;
  const double pp_products = 2.0 * layer_params + 2.0 * fp.output_params * 2 / 16;  // 2 micro-batches
  EXPECT_GE(pp.flops_per_token, pp_products);
  EXPECT_LE(pp.flops_per_token, pp_products + attention_bound);
  EXPECT_GE(tg.flops_per_token, 2.0 * fp.matmul_params);
  EXPECT_LE(tg.flops_per_token, 2.0 * fp.matmul_params + attention_bound);
}

// A test at depth 0 times every repetition from an empty cache (as llama-bench does), not on top of
// the previous repetitions' tokens.
TEST(BenchRepetitions, DepthZeroTestsStartEachRepetitionOnAnEmptyCache) {
  RandomBenchModel m("bench_repetitions.gguf");
  BenchConfig config;
  config.ubatch = 8;
  for (const BenchTest test : {BenchTest{.n_prompt = 16}, BenchTest{.n_gen = 4}}) {
    config.repetitions = 1;
    const BenchResult once = run_bench(m.model, model_footprint(m.file), test, config);
    config.repetitions = 3;
    const BenchResult thrice = run_bench(m.model, model_footprint(m.file), test, config);
    EXPECT_EQ(thrice.tokens_per_s.size(), 3u);
    EXPECT_EQ(thrice.kv_rows_held, once.kv_rows_held) << test.name();
    EXPECT_DOUBLE_EQ(thrice.bytes_per_token, once.bytes_per_token) << test.name();  // the KV rows read: equal too
  }
}

// Readings come in (before, after) pairs per repetition; each repetition is compared with the
// better of its own two, and the row reports the median share.
TEST(BenchPairedFraction, EachRepetitionAgainstTheBetterOfItsOwnTwoReadings) {
  // Shares 10/20, 12/24 (not 12/30: the 30 belongs to the next repetition), 15/30.
  EXPECT_DOUBLE_EQ(paired_fraction({10, 12, 15}, {20, 18, 24, 30, 25, 30}), 0.5);
  // Even count: the mean of the two middle shares (0.5 and 0.8 of 0.4, 0.5, 0.8, 0.9).
  EXPECT_DOUBLE_EQ(paired_fraction({4, 5, 8, 9}, {10, 10, 10, 10, 10, 10, 10, 10}), 0.65);
  EXPECT_DOUBLE_EQ(paired_fraction({4, 5}, {}), 0.0);  // no probes
  EXPECT_THROW(paired_fraction({4, 5}, {10, 10, 10}), MkvError);
}

TEST(BenchPairedFraction, RunBenchReadsAroundEveryRepetition) {
  RandomBenchModel m("bench_around.gguf");
  BenchConfig config;
  config.repetitions = 3;
  config.press = PressConfig::parse("momentkv", Budget{8, 0.0});
  config.nc_ab = config.depth0_ab = true;  // companions run inside the same repetitions
  int calls = 0;
  config.around_repetition = [&] { ++calls; };
  const BenchResult r = run_bench(m.model, model_footprint(m.file), {.n_gen = 2, .depth = 16}, config);
  EXPECT_EQ(calls, 2 * config.repetitions);
  EXPECT_EQ(r.tokens_per_s.size(), 3u);
  ASSERT_EQ(r.companions.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(TiedAndUntied, BenchAccounting, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Tied" : "Untied"; });

// page_residency reads /proc/self/smaps: an untouched mapping holds nothing, a touched one is
// resident whole (in 2 MiB pages or not: that depends on the host's THP setting), and a model
// read with --no-mmap is resident whole too.
TEST(BenchPageResidency, CountsTheResidentBytesOfAMapping) {
  constexpr std::size_t kPage = 4096, kSize = std::size_t{8} << 20;
  // Inaccessible pages on both sides keep the mapping one smaps entry of its own.
  auto* region = static_cast<char*>(::mmap(nullptr, kSize + 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(region, MAP_FAILED);
  char* middle = region + kPage;
  ASSERT_EQ(::mprotect(middle, kSize, PROT_READ | PROT_WRITE), 0);
  const PageResidency untouched = page_residency(middle, kSize);
  EXPECT_EQ(untouched.resident, 0u);
  EXPECT_EQ(untouched.huge, 0u);
  std::memset(middle, 1, kSize);
  const PageResidency touched = page_residency(middle, kSize);
  EXPECT_EQ(touched.resident, kSize);
  EXPECT_LE(touched.huge, touched.resident);
  ::munmap(region, kSize + 2 * kPage);

  const auto path = (test::temp_dir() / "page_residency.gguf").string();
  write_random_model(RandomModelSpec{}, path);
  const GgufFile read = GgufFile::open(path, GgufFile::Load::Read);
  const PageResidency image = page_residency(read.image().data(), read.image().size());
  EXPECT_GE(image.resident, read.file_size()) << "the copy read into memory is resident";
  EXPECT_LE(image.resident, read.file_size() + (std::size_t{2} << 20));
}

}  // namespace
}  // namespace mkv
