// ModelConfig::from_gguf's checks of the hyperparameters a file declares: values that would load
// and then compute garbage (a NaN or huge RMS epsilon, a non-finite RoPE base) are errors naming
// the file and the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model_config.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using ::testing::HasSubstr;

// The config of a llama header of 64-wide embeddings and a 16-token vocabulary; `edit` sets or
// overrides keys.
template <typename Edit>
ModelConfig config_with(Edit edit) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.embedding_length", 64);
  w.set_u32("llama.block_count", 1);
  w.set_u32("llama.attention.head_count", 4);
  w.set_u32("llama.feed_forward_length", 128);
  w.add_tensor_f32("token_embd.weight", GgmlType::F32, {64, 16}, std::vector<float>(64 * 16, 0.0f));
  edit(w);
  return ModelConfig::from_gguf(GgufFile::from_bytes(w.to_bytes(), "cfg.gguf"));
}

template <typename Edit>
std::string config_error(Edit edit) {
  return test::error_of([&] { config_with(edit); });
}

TEST(ModelConfig, TheBaseHeaderLoads) {
  EXPECT_FLOAT_EQ(config_with([](GgufWriter&) {}).rms_eps, 1e-5f);
}

TEST(ModelConfig, RmsEpsilonMustBeSmallAndPositive) {
  for (float eps : {0.0f, -1e-5f, 0.5f, 1e30f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()})
    EXPECT_THAT(config_error([&](GgufWriter& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", eps); }),
                HasSubstr("cfg.gguf: rms epsilon must be in (0, 0.1)"))
        << eps;
  EXPECT_FLOAT_EQ(config_with([](GgufWriter& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f); }).rms_eps,
                  1e-6f);
}

TEST(ModelConfig, RopeBaseMustBePositiveAndFinite) {
  for (float base : {0.0f, -10000.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    EXPECT_THAT(config_error([&](GgufWriter& w) { w.set_f32("llama.rope.freq_base", base); }),
                HasSubstr("cfg.gguf: rope base must be positive and finite"))
        << base;
}

}  // namespace
}  // namespace mkv
