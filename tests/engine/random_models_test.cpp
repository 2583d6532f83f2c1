// Models written by our own GGUF writer (no shared assets): every architecture and tensor type
// loads and runs, and the ways of feeding tokens (one batch, chunks, single-token decode) agree.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

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

// llama.cpp's quantizer (llama-quant.cpp, Q4_K_M / Q5_K_M) gives Q6_K to attn_v and ffn_down in
// these layers of a 16-layer model (Llama-3.2-1B): the first and last two, and 4, 7, 10, 13.
TEST(RandomModelSpec, KQuantMediumMixPicksLlamaCppsLayers) {
  RandomModelSpec spec = RandomModelSpec::preset("llama-3.2-1b");
  spec.set_weight_types("Q4_K_M");
  EXPECT_EQ(spec.type, GgmlType::Q4_K);
  EXPECT_EQ(spec.mix, WeightMix::KQuantMedium);
  const std::set<int> more_bits = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int l = 0; l < 16; ++l) {
    const GgmlType wider = more_bits.count(l) ? GgmlType::Q6_K : GgmlType::Q4_K;
    EXPECT_EQ(spec.weight_type("attn_v", l), wider) << l;
    EXPECT_EQ(spec.weight_type("ffn_down", l), wider) << l;
    for (const char* role : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"})
      EXPECT_EQ(spec.weight_type(role, l), GgmlType::Q4_K) << role << " " << l;
  }
  EXPECT_EQ(spec.weight_type("token_embd", -1), GgmlType::Q6_K);  // tied: it is the classifier
  spec.tied_output = false;
  EXPECT_EQ(spec.weight_type("token_embd", -1), GgmlType::Q4_K);
  EXPECT_EQ(spec.weight_type("output", -1), GgmlType::Q6_K);

  spec.set_weight_types("q5_k_m");
  EXPECT_EQ(spec.type, GgmlType::Q5_K);
  EXPECT_EQ(spec.weight_type("ffn_down", 0), GgmlType::Q6_K);
  EXPECT_EQ(spec.weight_type("ffn_down", 2), GgmlType::Q5_K);
  spec.set_weight_types("Q8_0");
  EXPECT_EQ(spec.mix, WeightMix::Uniform);
  EXPECT_EQ(spec.weight_type("ffn_down", 0), GgmlType::Q8_0);
  for (const char* bad : {"Q8_0_M", "Q4_K_S", "Q6_K_M", "_M", "", "Q9"})
    EXPECT_THROW(spec.set_weight_types(bad), MkvError) << bad;
}

// A Q4_K_M file holds the mix's types tensor by tensor, loads and gives finite logits that match
// decode and one batch (the Q6_K and Q4_K products side by side in one model).
TEST(RandomModelSpec, KQuantMediumModelHasTheMixAndRuns) {
  RandomModelSpec spec = test::random_model_spec("tiny-qwen2", GgmlType::Q4_K);  // tied embedding
  spec.n_layers = 8;  // the wider layers are 0, 3, 6 and 7
  spec.set_weight_types("Q4_K_M");
  const auto path = (test::temp_dir() / "q4km.gguf").string();
  write_random_model(spec, path);
  const GgufFile file = GgufFile::open(path);
  int q6k = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (t.dims.size() < 2) continue;
    int layer = -1;
    std::string role = t.name.substr(0, t.name.find('.'));
    if (t.name.starts_with("blk.")) {
      layer = std::stoi(t.name.substr(4));
      const auto role_begin = t.name.find('.', 4) + 1;
      role = t.name.substr(role_begin, t.name.find('.', role_begin) - role_begin);
    }
    const bool wider = role == "token_embd" || ((role == "attn_v" || role == "ffn_down") &&
                                                (layer == 0 || layer == 3 || layer == 6 || layer == 7));
    EXPECT_EQ(t.type, wider ? GgmlType::Q6_K : GgmlType::Q4_K) << t.name;
    q6k += wider;
  }
  EXPECT_EQ(q6k, 9);
  Transformer model(file, 64);
  const std::vector<int32_t> tokens = {5, 77, 300, 12, 9};
  std::vector<float> batch(tokens.size() * model.config().n_vocab);
  Session(model, SessionOptions{}).evaluate(tokens, batch.data());
  Session one_by_one(model, SessionOptions{});
  std::span<const float> last;
  for (int32_t t : tokens) last = one_by_one.decode(t);
  const std::span<const float> batch_last(batch.data() + (tokens.size() - 1) * model.config().n_vocab,
                                          model.config().n_vocab);
  float scale = 1.0f;
  for (float v : batch) {
    ASSERT_TRUE(std::isfinite(v));
    scale = std::max(scale, std::fabs(v));
  }
  EXPECT_LT(max_abs_diff(last, batch_last), 4e-6 * scale);
}

TEST(RandomModelSpec, Llama32OneBillionShapeHasTheRightParameterCount) {
  // Llama-3.2-1B has 1.24 B parameters (tied embeddings).
  EXPECT_NEAR(RandomModelSpec::preset("llama-3.2-1b").parameter_count() / 1e9, 1.236, 0.01);
}

}  // namespace
}  // namespace mkv
