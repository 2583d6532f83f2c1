// stories260K against an independent float64 reference (shared/assets/golden/stories260K_golden.json).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "model/transformer.h"
#include "ops/vec.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using nlohmann::json;

class Stories260K : public ::testing::Test {
 protected:
  void SetUp() override {
    auto assets = test::shared_assets();
    if (!assets || !std::filesystem::exists(*assets / "stories260K.gguf"))
      GTEST_SKIP() << "shared asset 'stories260K.gguf' not found (set MOMENTKV_ASSETS or place ../shared/assets)";
    file_ = std::make_unique<GgufFile>(GgufFile::open((*assets / "stories260K.gguf").string()));
    model_ = std::make_unique<Transformer>(*file_, 512);
    golden_ = json::parse(test::read_file(*assets / "golden" / "stories260K_golden.json"));
  }

  Session make_session(KvStorage storage = KvStorage::F32) {
    SessionOptions o;
    o.kv_storage = storage;
    return Session(*model_, o);
  }

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
  json golden_;
};

// Mean negative log-likelihood of ids[p+1] under logits row p; also the largest per-position
// deviation from `reference` when given.
double mean_nll(const std::vector<float>& logits, const std::vector<int32_t>& ids, int n_vocab,
                const std::vector<double>* reference = nullptr, double* max_diff = nullptr) {
  double total = 0.0;
  for (std::size_t p = 0; p + 1 < ids.size(); ++p) {
    const float* row = logits.data() + p * n_vocab;
    const double nll = log_sum_exp(row, n_vocab) - row[ids[p + 1]];
    if (reference) *max_diff = std::max(*max_diff, std::fabs(nll - (*reference)[p]));
    total += nll;
  }
  return total / static_cast<double>(ids.size() - 1);
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST_F(Stories260K, GreedyFromBosMatchesReferenceTokensAndTop5Logits) {
  const auto& steps = golden_["bos_greedy_200"]["per_step"];
  const auto expected = golden_["bos_greedy_200"]["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(expected.size(), 201u);
  Session session = make_session();
  std::vector<int32_t> generated{expected[0]};
  std::span<const float> logits = session.prefill(std::span<const int32_t>(&expected[0], 1));
  double max_diff = 0.0;
  for (std::size_t i = 0; i < 200; ++i) {
    for (const auto& pair : steps[i]["top5"]) {
      const double diff = std::fabs(logits[pair[0].get<int>()] - pair[1].get<double>());
      max_diff = std::max(max_diff, diff);
      EXPECT_LT(diff, 1e-3) << "position " << i << " token " << pair[0];
    }
    generated.push_back(argmax(logits));
    if (i + 1 < 200) logits = session.decode(generated.back());
  }
  EXPECT_EQ(generated, expected);
  std::printf("stories260K greedy 200: max |logit - reference| over top-5 = %.3g\n", max_diff);
}

TEST_F(Stories260K, PromptGreedyContinuationMatches) {
  const auto input = golden_["prompt_greedy"]["input_ids_with_bos"].get<std::vector<int32_t>>();
  const auto expected = golden_["prompt_greedy"]["generated"].get<std::vector<int32_t>>();
  Session session = make_session();
  std::span<const float> logits = session.prefill(input);
  std::vector<int32_t> generated;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    generated.push_back(argmax(logits));
    if (i + 1 < expected.size()) logits = session.decode(generated.back());
  }
  EXPECT_EQ(generated, expected);
}

// Mean NLL of the 512-token TinyStories window, evaluated in several prefill chunk sizes.
TEST_F(Stories260K, TinyStoriesNllMatchesReference) {
  const auto ids = golden_["tinystories_val_nll"]["input_ids"].get<std::vector<int32_t>>();
  const auto ref = golden_["tinystories_val_nll"]["per_position_nll"].get<std::vector<double>>();
  const double ref_mean = golden_["tinystories_val_nll"]["mean_nll"].get<double>();
  ASSERT_EQ(ids.size(), 512u);
  ASSERT_EQ(ref.size(), 511u);
  const int n_vocab = model_->config().n_vocab;
  for (int ubatch : {512, 100, 1}) {
    SessionOptions o;
    o.ubatch = ubatch;
    Session session(*model_, o);
    std::vector<float> logits(ids.size() * n_vocab);
    session.evaluate(ids, logits.data());
    double max_diff = 0.0;
    const double mean = mean_nll(logits, ids, n_vocab, &ref, &max_diff);
    EXPECT_NEAR(mean, ref_mean, 1e-3) << "ubatch " << ubatch;
    EXPECT_LT(max_diff, 1e-3) << "ubatch " << ubatch;
    std::printf("ubatch %d: mean NLL %.6f (reference %.6f), max per-position diff %.3g\n", ubatch, mean,
                ref_mean, max_diff);
  }
}

// An f16 cache is a legitimate lower-precision engine: logits stay close, not exact.
TEST_F(Stories260K, F16CacheStaysCloseToReference) {
  const auto ids = golden_["tinystories_val_nll"]["input_ids"].get<std::vector<int32_t>>();
  const double ref_mean = golden_["tinystories_val_nll"]["mean_nll"].get<double>();
  Session session = make_session(KvStorage::F16);
  const int n_vocab = model_->config().n_vocab;
  std::vector<float> logits(ids.size() * n_vocab);
  session.evaluate(ids, logits.data());
  EXPECT_NEAR(mean_nll(logits, ids, n_vocab), ref_mean, 5e-3);
}

TEST_F(Stories260K, ContextOverflowIsAClearError) {
  SessionOptions o;
  o.n_ctx = 8;
  Session session(*model_, o);
  std::vector<int32_t> ids(9, 1);
  try {
    session.prefill(ids);
    FAIL() << "expected an error";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("context is full"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mkv
