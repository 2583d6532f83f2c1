// Real GGUF files from the shared assets: stories260K (gguf-py), the llama.cpp-quantised
// architecture goldens, and the Llama-3 vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "support/test_support.h"

namespace mkv::test {
namespace {

TEST(GgufRealFiles, Stories260K) {
  MKV_REQUIRE_ASSET(path, "stories260K.gguf");
  const GgufFile file = GgufFile::open(path.string());
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.tensors().size(), 48u);
  EXPECT_EQ(file.metadata().size(), 19u);
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_EQ(file.data_offset(), 14176u);
  EXPECT_EQ(file.file_size(), std::filesystem::file_size(path));

  std::size_t data_end = 0;  // relative to the data section
  for (const GgufTensorInfo& t : file.tensors()) data_end = std::max(data_end, t.offset + t.nbytes);
  EXPECT_EQ(file.data_offset() + data_end, file.file_size());

  EXPECT_EQ(file.get_string("general.architecture"), "llama");
  EXPECT_EQ(file.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(file.get_string_array("tokenizer.ggml.tokens").size(), 512u);
  const GgufTensorInfo& embd = file.tensor("token_embd.weight");
  EXPECT_EQ(embd.type, GgmlType::F32);
  EXPECT_EQ(embd.dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(embd.nbytes, 64u * 512 * 4);
}

TEST(GgufRealFiles, ArchGoldensOpenWithTheTensorTypesLlamaCppWrote) {
  MKV_REQUIRE_ASSET(arch_dir, "golden/arch");
  int n_files = 0;
  for (const char* model : {"llama3-tiny", "qwen2-tiny", "qwen3-tiny"}) {
    std::ifstream json_in(arch_dir / model / (std::string(model) + ".json"));
    ASSERT_TRUE(json_in) << model;
    const nlohmann::json golden = nlohmann::json::parse(json_in);
    for (const auto& [type_name, entry] : golden.at("files").items()) {
      const auto path = arch_dir / model / entry.at("file").get<std::string>();
      SCOPED_TRACE(path.string());
      const GgufFile file = GgufFile::open(path.string());
      ++n_files;
      const auto& tensor_types = entry.at("tensor_types");
      EXPECT_EQ(file.tensors().size(), tensor_types.size());
      for (const auto& [name, type] : tensor_types.items())
        EXPECT_EQ(ggml_type_info(file.tensor(name).type).name, type.get<std::string>()) << name;
    }
  }
  EXPECT_EQ(n_files, 33);
}

TEST(GgufRealFiles, Llama3Vocabulary) {
  MKV_REQUIRE_ASSET(path, "golden/tokenizer/llama3-vocab.gguf");
  const GgufFile file = GgufFile::open(path.string());
  EXPECT_EQ(file.get_string_array("tokenizer.ggml.tokens").size(), 128256u);
  EXPECT_EQ(file.get_string_array("tokenizer.ggml.merges").size(), 280147u);
  EXPECT_TRUE(file.tensors().empty());
}

}  // namespace
}  // namespace mkv::test
