// Every press and wrapper on a real model (stories260K): runs without error, shrinks the cache to
// exactly its budget (bytes measured), and reproduces the full cache when nothing is evicted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "kv/press_config.h"
#include "support/test_support.h"

namespace mkv {
namespace {

constexpr int kPrompt = 256;

// How a press spreads its budget: every head L, per layer (PyramidKV: rounded linear
// schedule), per head within a layer (Ada-KV: the layer holds heads × L), or over the heads of
// every layer (alloc=global: only the model's total is heads × layers × L).
enum class Allocation { Uniform, PerLayer, PerHead, AcrossLayers };

struct PressCase {
  std::string spec;
  Allocation allocation;
};

void PrintTo(const PressCase& c, std::ostream* os) { *os << c.spec; }

class PressesOnStories : public ::testing::TestWithParam<PressCase> {
 protected:
  void SetUp() override {
    MKV_REQUIRE_ASSET(model_path, "stories260K.gguf");
    MKV_REQUIRE_ASSET(golden_path, "golden/stories260K_golden.json");
    file_ = std::make_unique<GgufFile>(GgufFile::open(model_path.string()));
    model_ = std::make_unique<Transformer>(*file_, 512);
    const auto ids = nlohmann::json::parse(test::read_file(golden_path))["tinystories_val_nll"]["input_ids"]
                         .get<std::vector<int32_t>>();
    prompt_.assign(ids.begin(), ids.begin() + kPrompt);
    continuation_.assign(ids.begin() + kPrompt, ids.begin() + kPrompt + 8);
  }

  // Prefills the prompt with `press`, then decodes the continuation; returns every decode's logits.
  std::vector<float> run(Press* press, KvCache** cache_after_prefill = nullptr) {
    SessionOptions o;
    o.press = press;
    session_ = std::make_unique<Session>(*model_, o);
    std::vector<float> logits;
    session_->prefill(prompt_);
    if (cache_after_prefill) {
      snapshot_tokens_ = session_->cache().token_bytes();
      snapshot_moments_ = session_->cache().moment_bytes();
      snapshot_lengths_.clear();
      for (int l = 0; l < model_->config().n_layers; ++l)
        for (int h = 0; h < model_->config().n_kv_heads; ++h) snapshot_lengths_.push_back(session_->cache().length(l, h));
    }
    for (int32_t token : continuation_) {
      auto step = session_->decode(token);
      logits.insert(logits.end(), step.begin(), step.end());
    }
    return logits;
  }

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Session> session_;
  std::vector<int32_t> prompt_, continuation_;
  std::size_t snapshot_tokens_ = 0, snapshot_moments_ = 0;
  std::vector<int32_t> snapshot_lengths_;  // (layers × KV heads) after the prefill's compression
};

TEST_P(PressesOnStories, RunsAndHoldsExactlyItsBudget) {
  const ModelConfig& c = model_->config();
  const int heads = c.n_layers * c.n_kv_heads;
  for (int32_t budget : {16, 64, 200}) {
    auto press = PressConfig::parse(GetParam().spec, Budget{budget, 0.0}).make();
    KvCache* unused = nullptr;
    const std::vector<float> logits = run(press.get(), &unused);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v)) << press->spec();

    int64_t total = 0;
    int layers_off_budget = 0;  // layers whose heads hold other than n_kv_heads × budget rows
    for (int l = 0; l < c.n_layers; ++l) {
      int64_t layer_total = 0;
      for (int h = 0; h < c.n_kv_heads; ++h) {
        const int32_t length = snapshot_lengths_[l * c.n_kv_heads + h];
        layer_total += length;
        if (GetParam().allocation == Allocation::Uniform) {
          EXPECT_EQ(length, budget) << press->spec();
        }
      }
      total += layer_total;
      if (GetParam().allocation == Allocation::PerHead) {
        EXPECT_EQ(layer_total, int64_t{budget} * c.n_kv_heads) << press->spec() << " layer " << l;
      }
      layers_off_budget += layer_total != int64_t{budget} * c.n_kv_heads;
    }
    // Across layers, the budget moves between layers (stories260K's layers differ enough).
    if (GetParam().allocation == Allocation::AcrossLayers && budget < 200) {
      EXPECT_GT(layers_off_budget, 0) << press->spec();
    }
    // Every allocation keeps budget × heads rows in total (PyramidKV up to one row per head of rounding).
    const int64_t slack = GetParam().allocation == Allocation::PerLayer ? heads : 0;
    EXPECT_NEAR(total, int64_t{budget} * heads, slack) << press->spec();
    const KvCache& cache = session_->cache();
    EXPECT_EQ(snapshot_tokens_, static_cast<std::size_t>(total) * cache.row_bytes()) << press->spec();
    const PressGeometry g{c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim_k, c.head_dim_v, c.attention_scale()};
    EXPECT_EQ(snapshot_moments_, static_cast<std::size_t>(heads * press->moment_numbers_per_head(g)) * sizeof(float))
        << press->spec();
  }
}

TEST_P(PressesOnStories, BudgetAtLeastThePromptReproducesTheFullCache) {
  const std::vector<float> full = run(nullptr);
  auto press = PressConfig::parse(GetParam().spec, Budget{kPrompt + int32_t(continuation_.size()), 0.0}).make();
  const std::vector<float> compressed = run(press.get());
  ASSERT_EQ(full.size(), compressed.size());
  for (std::size_t i = 0; i < full.size(); ++i) ASSERT_EQ(full[i], compressed[i]) << press->spec() << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(
    EveryPressAndWrapper, PressesOnStories,
    ::testing::Values(PressCase{"streaming_llm", Allocation::Uniform}, PressCase{"h2o", Allocation::Uniform},
                      PressCase{"snapkv", Allocation::Uniform}, PressCase{"pyramidkv", Allocation::PerLayer},
                      PressCase{"adakv", Allocation::PerHead}, PressCase{"adakv:scorer=h2o", Allocation::PerHead},
                      PressCase{"momentkv:alloc=adaptive,rounds=1,nc=0", Allocation::PerHead}, PressCase{"momentkv", Allocation::AcrossLayers}, PressCase{"momentkv:alloc=uniform", Allocation::Uniform},
                      PressCase{"momentkv:nc=0", Allocation::AcrossLayers},
                      PressCase{"momentkv:rounds=2", Allocation::AcrossLayers},
                      PressCase{"adakv:alloc=global", Allocation::AcrossLayers},
                      PressCase{"adakv:alloc=pyramid_adaptive", Allocation::PerLayer},
                      PressCase{"momentkv:alloc=pyramid_adaptive", Allocation::PerLayer},
                      PressCase{"momentkv:alloc=adaptive", Allocation::PerHead},
                      PressCase{"momentkv:alloc=pyramid", Allocation::PerLayer},
                      PressCase{"momentkv:variant=grouped", Allocation::AcrossLayers}, PressCase{"snapkv:nc=1", Allocation::Uniform},
                      PressCase{"adakv:nc=1", Allocation::PerHead},
                      PressCase{"streaming_llm:nc=1,groups=4", Allocation::Uniform}),
    [](const auto& info) {
      std::string name = info.param.spec;
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace mkv
