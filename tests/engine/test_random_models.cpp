// Models written by our own GGUF writer (no shared assets): every architecture and tensor type
// loads and runs, and the ways of feeding tokens (one batch, chunks, single-token decode) agree.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"
#include "random_model_spec.h"
#include "support/test_support.h"

namespace mkv {
namespace {

struct RandomCase {
  std::string preset;
  GgmlType type;
};

void PrintTo(const RandomCase& c, std::ostream* os) { *os << c.preset << " " << ggml_type_info(c.type).name; }

std::string case_name(const ::testing::TestParamInfo<RandomCase>& info) {
  std::string name = info.param.preset + "_" + std::string(ggml_type_info(info.param.type).name);
  for (auto& ch : name)
    if (ch == '-' || ch == '.') ch = '_';
  return name;
}

class RandomModel : public ::testing::TestWithParam<RandomCase> {
 protected:
  void SetUp() override {
    const RandomModelSpec spec = test::random_model_spec(GetParam().preset, GetParam().type);
    path_ = test::temp_dir() / "model.gguf";
    write_random_model(spec, path_.string());
    file_ = std::make_unique<GgufFile>(GgufFile::open(path_.string()));
    model_ = std::make_unique<Transformer>(*file_, 64);
    for (int i = 0; i < 40; ++i) tokens_.push_back((i * 37 + 11) % model_->config().n_vocab);
  }

  std::vector<float> evaluate(int ubatch) {
    SessionOptions o;
    o.ubatch = ubatch;
    Session session(*model_, o);
    std::vector<float> logits(tokens_.size() * model_->config().n_vocab);
    session.evaluate(tokens_, logits.data());
    return logits;
  }

  std::filesystem::path path_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
  std::vector<int32_t> tokens_;
};

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

TEST_P(RandomModel, ChunkedPrefillAndDecodeAgreeWithOneBatch) {
  const int n_vocab = model_->config().n_vocab;
  const std::vector<float> whole = evaluate(64);
  for (float v : whole) ASSERT_TRUE(std::isfinite(v));
  // The paths sum in different orders (GEMM panels, one-token rows with two FMA chains): allow
  // float32 rounding relative to the logits' scale (random models reach |logit| ~ 200), a few
  // ulps of it per layer: the scalar variant, which fuses no multiply-add, differs by 1.04e-6 of
  // the scale on tiny-llama Q4_K. A wrong sum is off by orders of magnitude more.
  float scale = 1.0f;
  for (float v : whole) scale = std::max(scale, std::fabs(v));
  const double tol = 4e-6 * scale;
  EXPECT_LT(max_abs_diff(evaluate(7), whole), tol);
  EXPECT_LT(max_abs_diff(evaluate(1), whole), tol);

  Session session(*model_, SessionOptions{});
  std::span<const float> logits = session.prefill(std::span<const int32_t>(tokens_.data(), 10));
  EXPECT_LT(max_abs_diff(logits, std::span<const float>(whole.data() + 9 * n_vocab, n_vocab)), tol);
  for (std::size_t i = 10; i < tokens_.size(); ++i) {
    logits = session.decode(tokens_[i]);
    ASSERT_LT(max_abs_diff(logits, std::span<const float>(whole.data() + i * n_vocab, n_vocab)), tol) << i;
  }
  EXPECT_EQ(session.cache().max_length(), static_cast<int32_t>(tokens_.size()));
}

TEST_P(RandomModel, ConfigReflectsTheArchitecture) {
  const ModelConfig& c = model_->config();
  EXPECT_EQ(c.arch, RandomModelSpec::preset(GetParam().preset).arch);
  EXPECT_EQ(c.qkv_bias, c.arch == "qwen2");
  EXPECT_EQ(c.qk_norm, c.arch == "qwen3");
  EXPECT_EQ(c.rope_style == RopeStyle::Norm, c.arch == "llama");
}

std::vector<RandomCase> cases() {
  std::vector<RandomCase> out;
  for (const char* preset : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"})
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
      out.push_back({preset, t});
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryArchitectureAndType, RandomModel, ::testing::ValuesIn(cases()), case_name);

TEST(RandomModelSpec, UnknownShapeAndBadWidthsAreClearErrors) {
  EXPECT_THROW(RandomModelSpec::preset("llama-9000"), MkvError);
  RandomModelSpec spec = RandomModelSpec::preset("tiny-llama");
  spec.type = GgmlType::Q4_K;  // n_embd 64 is not a multiple of 256
  EXPECT_THROW(write_random_model(spec, (test::temp_dir() / "x.gguf").string()), MkvError);
}

TEST(RandomModelSpec, Llama32OneBillionShapeHasTheRightParameterCount) {
  // Llama-3.2-1B has 1.24 B parameters (tied embeddings).
  EXPECT_NEAR(RandomModelSpec::preset("llama-3.2-1b").parameter_count() / 1e9, 1.236, 0.01);
}

}  // namespace
}  // namespace mkv
