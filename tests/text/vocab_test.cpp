#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/test_support.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace mkv {
namespace {

using nlohmann::json;

std::vector<int32_t> ids_of_type(const Vocab& vocab, TokenType type) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab.size(); ++id)
    if (vocab.types[id] == type) ids.push_back(id);
  return ids;
}

// A 6-token SentencePiece vocab; tests change one key to make it invalid.
GgufWriter small_spm_vocab() {
  GgufWriter writer;
  writer.set_string("tokenizer.ggml.model", "llama");
  writer.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b"});
  writer.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2, -3});
  writer.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
  return writer;
}

// The MkvError message from_gguf throws for `writer`'s file ("" when it does not throw).
std::string load_error(const GgufWriter& writer) {
  try {
    Vocab::from_gguf(GgufFile::from_bytes(writer.to_bytes(), "vocab-test.gguf"));
  } catch (const MkvError& e) {
    return e.what();
  }
  return "";
}

TEST(Vocab, ReadsStories260K) {
  MKV_REQUIRE_ASSET(path, "stories260K.gguf");
  const Vocab vocab = Vocab::from_gguf(GgufFile::open(path.string()));
  EXPECT_EQ(vocab.model, "llama");
  ASSERT_EQ(vocab.size(), 512);
  EXPECT_EQ(vocab.unk, 0);
  EXPECT_EQ(vocab.bos, 1);
  EXPECT_EQ(vocab.eos, 2);
  EXPECT_EQ(vocab.pad, -1);  // stored as 0xFFFFFFFF
  EXPECT_EQ(vocab.eot, -1);
  EXPECT_TRUE(vocab.add_bos);  // no keys: llama.cpp's SentencePiece defaults
  EXPECT_FALSE(vocab.add_eos);
  EXPECT_TRUE(vocab.add_space_prefix);
  EXPECT_EQ(ids_of_type(vocab, TokenType::NORMAL).size(), 253u);
  EXPECT_EQ(ids_of_type(vocab, TokenType::UNKNOWN), std::vector<int32_t>{0});
  EXPECT_EQ(ids_of_type(vocab, TokenType::CONTROL), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ids_of_type(vocab, TokenType::BYTE).size(), 256u);
  EXPECT_EQ(vocab.tokens[3], "<0x00>");
  EXPECT_EQ(vocab.scores[259], 0.0f);
  EXPECT_EQ(vocab.scores[511], -252.0f);
  EXPECT_TRUE(vocab.merges.empty());
  EXPECT_EQ(vocab.end_of_generation_ids(), std::vector<int32_t>{2});
}

// Special ids, flags, CONTROL set and EOG set as llama.cpp resolved them (golden/tokenizer/*.meta.json).
void expect_resolved_like_llama_cpp(const std::string& name, const std::string& pre, bool add_bos) {
  MKV_REQUIRE_ASSET(gguf_path, "golden/tokenizer/" + name + "-vocab.gguf");
  MKV_REQUIRE_ASSET(meta_path, "golden/tokenizer/" + name + ".meta.json");
  const json resolved = json::parse(test::read_file(meta_path))["llama_cpp_resolved"];
  const Vocab vocab = Vocab::from_gguf(GgufFile::open(gguf_path.string()));
  EXPECT_EQ(vocab.model, "gpt2");
  EXPECT_EQ(vocab.pre, pre);
  EXPECT_EQ(vocab.size(), resolved["n_tokens"].get<int32_t>());
  EXPECT_EQ(vocab.bos, resolved["bos"].get<int32_t>());
  EXPECT_EQ(vocab.eos, resolved["eos"].get<int32_t>());
  EXPECT_EQ(vocab.eot, resolved["eot"].get<int32_t>());
  EXPECT_EQ(vocab.pad, resolved["pad"].get<int32_t>());
  EXPECT_EQ(vocab.add_bos, add_bos);
  EXPECT_EQ(vocab.add_bos, resolved["add_bos"].get<bool>());
  EXPECT_EQ(vocab.add_eos, resolved["add_eos"].get<bool>());
  EXPECT_FALSE(vocab.add_space_prefix);
  EXPECT_FALSE(vocab.merges.empty());
  EXPECT_FALSE(vocab.chat_template.empty());
  EXPECT_EQ(ids_of_type(vocab, TokenType::CONTROL), resolved["control"].get<std::vector<int32_t>>());
  const auto eog = resolved["eog"].get<std::vector<int32_t>>();
  EXPECT_EQ(vocab.end_of_generation_ids(), eog);
  const auto tokenizer = Tokenizer::create(vocab);  // "gpt2" -> the BPE tokenizer
  for (int32_t id : eog) EXPECT_TRUE(tokenizer->is_end_of_generation(id)) << id;
  EXPECT_FALSE(tokenizer->is_end_of_generation(0));
}

TEST(Vocab, ResolvesLlama3LikeLlamaCpp) { expect_resolved_like_llama_cpp("llama3", "llama-bpe", true); }

TEST(Vocab, ResolvesQwen3LikeLlamaCpp) {
  // Includes the quirk: "</s>" (128247) is an ordinary token that llama.cpp turns into an EOG control.
  expect_resolved_like_llama_cpp("qwen3", "qwen2", false);
}

TEST(Vocab, DetectsEotByTextInPriorityOrder) {
  Vocab vocab;
  vocab.tokens = {"a", "<|endoftext|>", "<|im_end|>", "<|fim_pad|>", "<PAD>"};
  vocab.types.assign(vocab.tokens.size(), TokenType::NORMAL);
  vocab.detect_special_tokens();
  EXPECT_EQ(vocab.eot, 2);  // <|im_end|> ranks before <|endoftext|>
  EXPECT_EQ(ids_of_type(vocab, TokenType::CONTROL), (std::vector<int32_t>{1, 2, 3}));
  // Only the first FIM pad text of the group counts, as in llama.cpp.
  EXPECT_EQ(vocab.end_of_generation_ids(), (std::vector<int32_t>{1, 2, 3}));
}

TEST(Vocab, AcceptsSmallSentencePieceVocab) {
  const Vocab vocab = Vocab::from_gguf(GgufFile::from_bytes(small_spm_vocab().to_bytes(), "ok.gguf"));
  EXPECT_EQ(vocab.size(), 6);
  EXPECT_EQ(vocab.pre, "default");
  EXPECT_EQ(vocab.bos, 1);
}

TEST(Vocab, ReadsFlagKeys) {
  GgufWriter writer = small_spm_vocab();
  writer.set_bool("tokenizer.ggml.add_bos_token", false);
  writer.set_bool("tokenizer.ggml.add_eos_token", true);
  writer.set_bool("tokenizer.ggml.add_space_prefix", false);
  writer.set_u32("tokenizer.ggml.eos_token_id", 5);
  writer.set_i32("tokenizer.ggml.padding_token_id", -1);
  writer.set_string("tokenizer.chat_template", "{{ messages }}");
  const Vocab vocab = Vocab::from_gguf(GgufFile::from_bytes(writer.to_bytes(), "flags.gguf"));
  EXPECT_FALSE(vocab.add_bos);
  EXPECT_TRUE(vocab.add_eos);
  EXPECT_FALSE(vocab.add_space_prefix);
  EXPECT_EQ(vocab.eos, 5);
  EXPECT_EQ(vocab.pad, -1);
  EXPECT_EQ(vocab.chat_template, "{{ messages }}");
}

TEST(Vocab, RejectsInvalidFilesNamingFileAndKey) {
  struct Case {
    std::string what;
    std::function<void(GgufWriter&)> change;
    std::string expected_key;
  };
  const std::vector<Case> cases = {
      {"short scores", [](GgufWriter& w) { w.set_f32_array("tokenizer.ggml.scores", {0, 0}); },
       "tokenizer.ggml.scores"},
      {"long token types",
       [](GgufWriter& w) { w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 1}); },
       "tokenizer.ggml.token_type"},
      {"token type 9",
       [](GgufWriter& w) { w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 9, 1}); },
       "tokenizer.ggml.token_type"},
      {"bos out of range", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.bos_token_id", 6); },
       "tokenizer.ggml.bos_token_id"},
      {"negative eot", [](GgufWriter& w) { w.set_i32("tokenizer.ggml.eot_token_id", -7); },
       "tokenizer.ggml.eot_token_id"},
      {"unknown model", [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "wordpiece"); },
       "tokenizer.ggml.model"},
      {"BPE without merges", [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "gpt2"); },
       "tokenizer.ggml.merges"},
      {"merge without space",
       [](GgufWriter& w) {
         w.set_string("tokenizer.ggml.model", "gpt2");
         w.set_string_array("tokenizer.ggml.merges", {"ab"});
       },
       "tokenizer.ggml.merges"},
      {"empty tokens", [](GgufWriter& w) { w.set_string_array("tokenizer.ggml.tokens", {}); },
       "tokenizer.ggml.tokens"},
  };
  for (const Case& c : cases) {
    GgufWriter writer = small_spm_vocab();
    c.change(writer);
    const std::string message = load_error(writer);
    EXPECT_NE(message.find("vocab-test.gguf"), std::string::npos) << c.what << ": " << message;
    EXPECT_NE(message.find(c.expected_key), std::string::npos) << c.what << ": " << message;
  }
}

}  // namespace
}  // namespace mkv
