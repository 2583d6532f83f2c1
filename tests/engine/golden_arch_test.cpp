// llama3 / qwen2 / qwen3 tiny models in 11 tensor types against llama.cpp and a float64 numpy
// reference (shared/assets/golden/arch, tolerances from its README).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "model/transformer.h"
#include "ops/matmul_int8.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using nlohmann::json;

struct ArchCase {
  std::string model;
  std::string type;
};

void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.model << " " << c.type; }

std::string case_name(const ::testing::TestParamInfo<ArchCase>& info) {
  std::string name = info.param.model + "_" + info.param.type;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::vector<float> read_f32(const std::filesystem::path& path) {
  const std::string bytes = test::read_file(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

struct Diff {
  double max_abs = 0.0;
  double rms = 0.0;
};

Diff compare(const std::vector<float>& a, const std::vector<float>& b) {
  Diff d;
  double sum_sq = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(static_cast<double>(a[i]) - b[i]);
    d.max_abs = std::max(d.max_abs, e);
    sum_sq += e * e;
  }
  d.rms = std::sqrt(sum_sq / a.size());
  return d;
}

class ArchGolden : public ::testing::TestWithParam<ArchCase> {
 protected:
  void SetUp() override {
    auto assets = test::shared_assets();
    if (!assets || !std::filesystem::exists(*assets / "golden" / "arch"))
      GTEST_SKIP() << "shared asset 'golden/arch' not found (set MOMENTKV_ASSETS or place ../shared/assets)";
    dir_ = *assets / "golden" / "arch" / GetParam().model;
    meta_ = json::parse(test::read_file(dir_ / (GetParam().model + ".json")));
    entry_ = meta_["files"][GetParam().type];
    file_ = std::make_unique<GgufFile>(GgufFile::open((dir_ / entry_["file"].get<std::string>()).string()));
    model_ = std::make_unique<Transformer>(*file_, 128);
  }

  // Logits of every position of `ids` (n, n_vocab), `ubatch` tokens per forward pass (0: all).
  std::vector<float> evaluate(const std::vector<int32_t>& ids, int ubatch = 0) {
    SessionOptions options;
    options.ubatch = ubatch;
    Session session(*model_, options);
    std::vector<float> logits(ids.size() * model_->config().n_vocab);
    session.evaluate(ids, logits.data());
    return logits;
  }

  std::filesystem::path dir_;
  json meta_, entry_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
};

TEST_P(ArchGolden, PromptLogitsMatchLlamaCppAndFloat64Reference) {
  const auto prompt = meta_["prompt"].get<std::vector<int32_t>>();
  const std::vector<float> ours = evaluate(prompt);
  const auto llamacpp = read_f32(dir_ / entry_["logits_file"].get<std::string>());
  const auto numpy = read_f32(dir_ / entry_["numpy_logits_file"].get<std::string>());
  ASSERT_EQ(ours.size(), llamacpp.size());
  ASSERT_EQ(ours.size(), numpy.size());

  const Diff vs_llamacpp = compare(ours, llamacpp), vs_numpy = compare(ours, numpy);
  EXPECT_LE(vs_llamacpp.max_abs, entry_["tolerance"].get<double>());
  EXPECT_LE(vs_llamacpp.rms, entry_["rms_tolerance"].get<double>());
  // We multiply float32 activations with exactly dequantised weights, like the numpy reference.
  EXPECT_LE(vs_numpy.max_abs, entry_["numpy_tolerance_for_f32_engines"].get<double>());
  std::printf("%s %s: max|Δ| vs llama.cpp %.3g (tol %.3g), vs float64 %.3g (tol %.3g)\n",
              GetParam().model.c_str(), GetParam().type.c_str(), vs_llamacpp.max_abs,
              entry_["tolerance"].get<double>(), vs_numpy.max_abs,
              entry_["numpy_tolerance_for_f32_engines"].get<double>());
}

// MatmulPrecision::Fast's decode path (8-bit activations and integer kernels for the quantised
// types, fp16 / bf16 activations for F16 / BF16) changes the numerics the way llama.cpp's own
// kernels do: one token per forward pass, so that every product takes it, it must stay within the
// tolerance the golden files give llama.cpp. Instantiated for the types with a fast path only.
class ArchGoldenFast : public ArchGolden {};

TEST_P(ArchGoldenFast, FastDecodePathStaysWithinLlamaCppTolerance) {
  const std::string& type = GetParam().type;
  const MatmulPrecision saved = matmul_precision();
  set_matmul_precision(MatmulPrecision::Fast);
  const auto prompt = meta_["prompt"].get<std::vector<int32_t>>();
  const std::vector<float> fast = evaluate(prompt, 1);
  set_matmul_precision(saved);
  const std::vector<float> exact = evaluate(prompt, 1);
  const auto llamacpp = read_f32(dir_ / entry_["logits_file"].get<std::string>());
  ASSERT_EQ(fast.size(), llamacpp.size());
  const Diff vs_llamacpp = compare(fast, llamacpp), vs_exact = compare(fast, exact);
  EXPECT_LE(vs_llamacpp.max_abs, entry_["tolerance"].get<double>());
  EXPECT_LE(vs_llamacpp.rms, entry_["rms_tolerance"].get<double>());
  EXPECT_GT(vs_exact.max_abs, 0.0) << "the fast path was not taken";
  std::printf("%s %s fast path: max|Δ| vs llama.cpp %.3g (tol %.3g), vs our exact path %.3g\n",
              GetParam().model.c_str(), type.c_str(), vs_llamacpp.max_abs, entry_["tolerance"].get<double>(),
              vs_exact.max_abs);
}

// Prefill in Fast precision: the 64-token prompt in one pass takes the integer GEMM for every
// quantised type (matmul_int8_gemm_kernels.h), the float GEMM for F16 and the bf16 one for BF16;
// within the same tolerance, and not the one-token path's numbers where the integer GEMM ran.
TEST_P(ArchGoldenFast, FastPrefillStaysWithinLlamaCppTolerance) {
  const std::string& type = GetParam().type;
  const MatmulPrecision saved = matmul_precision();
  set_matmul_precision(MatmulPrecision::Fast);
  const auto prompt = meta_["prompt"].get<std::vector<int32_t>>();
  const std::vector<float> prefill = evaluate(prompt), decode = evaluate(prompt, 1);
  set_matmul_precision(saved);
  const auto llamacpp = read_f32(dir_ / entry_["logits_file"].get<std::string>());
  ASSERT_EQ(prefill.size(), llamacpp.size());
  const Diff vs_llamacpp = compare(prefill, llamacpp), vs_decode = compare(prefill, decode);
  EXPECT_LE(vs_llamacpp.max_abs, entry_["tolerance"].get<double>());
  EXPECT_LE(vs_llamacpp.rms, entry_["rms_tolerance"].get<double>());
  if (type != "F16" && type != "BF16") {  // the quantised types
    EXPECT_GT(vs_decode.max_abs, 0.0) << "the integer GEMM was not taken";
  }
  std::printf("%s %s fast prefill: max|Δ| vs llama.cpp %.3g (tol %.3g), vs the one-token fast path %.3g\n",
              GetParam().model.c_str(), type.c_str(), vs_llamacpp.max_abs, entry_["tolerance"].get<double>(),
              vs_decode.max_abs);
}

// F32 files: greedy ids equal (every margin is reliable). Other types: teacher forcing on
// llama.cpp's continuation, comparing our logits for its top-5 at every step.
TEST_P(ArchGolden, GreedyContinuation) {
  const auto prompt = meta_["prompt"].get<std::vector<int32_t>>();
  const auto greedy = entry_["greedy"].get<std::vector<int32_t>>();
  if (GetParam().type == "F32") {
    Session session(*model_, SessionOptions{});
    std::span<const float> logits = session.prefill(prompt);
    std::vector<int32_t> ours;
    for (std::size_t i = 0; i < greedy.size(); ++i) {
      ours.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
      if (i + 1 < greedy.size()) logits = session.decode(ours.back());
    }
    EXPECT_EQ(ours, greedy);
    return;
  }
  std::vector<int32_t> forced = prompt;
  forced.insert(forced.end(), greedy.begin(), greedy.end() - 1);
  const std::vector<float> logits = evaluate(forced);
  const int n_vocab = model_->config().n_vocab;
  const double tolerance = entry_["tolerance"].get<double>();
  const auto& top5 = entry_["greedy_top5"];
  for (std::size_t step = 0; step < greedy.size(); ++step) {
    const float* row = logits.data() + (prompt.size() - 1 + step) * n_vocab;
    for (const auto& pair : top5[step])
      EXPECT_NEAR(row[pair[0].get<int>()], pair[1].get<double>(), tolerance) << "greedy step " << step;
  }
}

std::vector<ArchCase> all_cases() {
  std::vector<ArchCase> cases;
  for (const char* model : {"llama3-tiny", "qwen2-tiny", "qwen3-tiny"})
    for (const char* type : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K"})
      cases.push_back({model, type});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllModelsAllTypes, ArchGolden, ::testing::ValuesIn(all_cases()), case_name);

std::vector<ArchCase> fast_path_cases() {
  std::vector<ArchCase> cases;
  for (const char* model : {"llama3-tiny", "qwen2-tiny", "qwen3-tiny"})
    for (const char* type : {"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K"}) cases.push_back({model, type});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(FastPathTypes, ArchGoldenFast, ::testing::ValuesIn(fast_path_cases()), case_name);

}  // namespace
}  // namespace mkv
