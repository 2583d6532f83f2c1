// import-llama2c: stories260K.bin + tok512.bin converts to the published stories260K.gguf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "model/llama2c_import.h"
#include "model/transformer.h"
#include "support/test_support.h"

namespace mkv {
namespace {

std::vector<float> all_logits(const GgufFile& file, const std::vector<int32_t>& ids) {
  Transformer model(file, 64);
  Session session(model, SessionOptions{});
  std::vector<float> logits(ids.size() * model.config().n_vocab);
  session.evaluate(ids, logits.data());
  return logits;
}

TEST(Llama2cImport, Stories260KMatchesThePublishedGgufByteForByte) {
  MKV_REQUIRE_ASSET(bin, "stories260K.bin");
  MKV_REQUIRE_ASSET(tokenizer, "tok512.bin");
  MKV_REQUIRE_ASSET(reference_path, "stories260K.gguf");
  const auto out = test::temp_dir() / "stories260K.gguf";
  import_llama2c({bin.string(), tokenizer.string(), out.string(), GgmlType::F32, 2048, "llama"});

  const GgufFile converted = GgufFile::open(out.string());
  const GgufFile reference = GgufFile::open(reference_path.string());
  ASSERT_EQ(converted.tensors().size(), reference.tensors().size());
  for (const auto& ref : reference.tensors()) {
    const GgufTensorInfo* got = converted.find_tensor(ref.name);
    ASSERT_NE(got, nullptr) << ref.name;
    EXPECT_EQ(got->type, ref.type) << ref.name;
    EXPECT_EQ(got->dims, ref.dims) << ref.name;
    ASSERT_EQ(got->nbytes, ref.nbytes) << ref.name;
    EXPECT_EQ(std::memcmp(got->data, ref.data, ref.nbytes), 0) << ref.name << " differs";
  }
  for (const char* key : {"tokenizer.ggml.tokens", "general.architecture", "llama.rope.dimension_count"})
    ASSERT_TRUE(converted.has(key)) << key;
  EXPECT_EQ(converted.get_string_array("tokenizer.ggml.tokens"), reference.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(converted.get_float_array("tokenizer.ggml.scores"), reference.get_float_array("tokenizer.ggml.scores"));
  EXPECT_EQ(converted.get_int_array("tokenizer.ggml.token_type"), reference.get_int_array("tokenizer.ggml.token_type"));
  for (const auto& [key, value] : reference.metadata())
    if (value.type != GgufValueType::ARRAY && value.type != GgufValueType::STRING) {
      EXPECT_EQ(converted.get_float(key), reference.get_float(key)) << key;
    }

  const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 426, 338, 286, 399, 393};
  EXPECT_EQ(all_logits(converted, ids), all_logits(reference, ids));
}

TEST(Llama2cImport, VocabularyCanComeFromAGguf) {
  MKV_REQUIRE_ASSET(bin, "stories260K.bin");
  MKV_REQUIRE_ASSET(reference_path, "stories260K.gguf");
  const auto out = test::temp_dir() / "from_gguf_vocab.gguf";
  import_llama2c({bin.string(), reference_path.string(), out.string(), GgmlType::F16, 0, "llama"});
  const GgufFile converted = GgufFile::open(out.string());
  const GgufFile reference = GgufFile::open(reference_path.string());
  EXPECT_EQ(converted.get_string_array("tokenizer.ggml.tokens"), reference.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(converted.get_int("llama.context_length"), 512);  // the checkpoint's seq_len
  EXPECT_EQ(converted.tensor("blk.0.attn_q.weight").type, GgmlType::F16);
  EXPECT_EQ(converted.tensor("blk.0.attn_norm.weight").type, GgmlType::F32);
}

// Rewrites the RoPE tables of a llama2.c checkpoint (bytes) for `base`; returns the new bytes.
std::string with_rope_base(std::string bytes, double base, bool corrupt_pair2 = false) {
  int32_t h[7];
  std::memcpy(h, bytes.data(), sizeof h);
  const int64_t dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kv_heads = h[4], vocab = std::abs(h[5]);
  const int64_t seq_len = h[6], head_dim = dim / heads, kv_dim = kv_heads * head_dim;
  const int64_t weights = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv_dim * dim + 3 * hidden * dim) + dim;
  float* real = reinterpret_cast<float*>(bytes.data() + sizeof h) + weights;
  float* imag = real + seq_len * head_dim / 2;
  for (int64_t pos = 0; pos < seq_len; ++pos)
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      const double angle = pos * std::pow(base, -2.0 * i / head_dim);
      real[pos * head_dim / 2 + i] = static_cast<float>(std::cos(angle));
      imag[pos * head_dim / 2 + i] = static_cast<float>(std::sin(angle));
    }
  if (corrupt_pair2) real[head_dim / 2 + 2] += 0.01f;
  return bytes;
}

TEST(Llama2cImport, RopeBaseComesFromTheStoredTable) {
  MKV_REQUIRE_ASSET(bin, "stories260K.bin");
  MKV_REQUIRE_ASSET(tokenizer, "tok512.bin");
  const auto dir = test::temp_dir();
  const auto rebased = dir / "theta500k.bin";
  const std::string bytes = with_rope_base(test::read_file(bin), 500000.0);
  std::ofstream(rebased, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  import_llama2c({rebased.string(), tokenizer.string(), (dir / "out.gguf").string()});
  const GgufFile converted = GgufFile::open((dir / "out.gguf").string());
  EXPECT_NEAR(converted.get_float("llama.rope.freq_base"), 500000.0, 50.0);

  const std::string corrupt = with_rope_base(test::read_file(bin), 500000.0, /*corrupt_pair2=*/true);
  std::ofstream(rebased, std::ios::binary).write(corrupt.data(), static_cast<std::streamsize>(corrupt.size()));
  try {
    import_llama2c({rebased.string(), tokenizer.string(), (dir / "bad.gguf").string()});
    FAIL() << "expected an error";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("freq_cis_real[1][2]"), std::string::npos) << e.what();
  }
}

TEST(Llama2cImport, TruncatedCheckpointIsAClearError) {
  MKV_REQUIRE_ASSET(bin, "stories260K.bin");
  MKV_REQUIRE_ASSET(tokenizer, "tok512.bin");
  const auto dir = test::temp_dir();
  const std::string bytes = test::read_file(bin);
  const auto truncated = dir / "truncated.bin";
  std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 4));
  try {
    import_llama2c({truncated.string(), tokenizer.string(), (dir / "out.gguf").string()});
    FAIL() << "expected an error";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("implies"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mkv
