#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "text/tokenizer.h"

namespace mkv {
namespace {

using nlohmann::json;

std::unique_ptr<Tokenizer> load_stories_tokenizer(const std::filesystem::path& gguf) {
  return Tokenizer::create(Vocab::from_gguf(GgufFile::open(gguf.string())));
}

// A hand-made SentencePiece vocab: <unk> <s> </s>, then the given pieces with their scores.
Vocab tiny_vocab(std::vector<std::pair<std::string, float>> pieces, bool byte_tokens) {
  Vocab vocab;
  vocab.model = "llama";
  vocab.tokens = {"<unk>", "<s>", "</s>"};
  vocab.types = {TokenType::UNKNOWN, TokenType::CONTROL, TokenType::CONTROL};
  vocab.scores = {0, 0, 0};
  if (byte_tokens) {
    for (int byte = 0; byte < 256; ++byte) {
      vocab.tokens.push_back(fmt::format("<0x{:02X}>", byte));
      vocab.types.push_back(TokenType::BYTE);
      vocab.scores.push_back(0);
    }
  }
  for (auto& [text, score] : pieces) {
    vocab.tokens.push_back(text);
    vocab.types.push_back(TokenType::NORMAL);
    vocab.scores.push_back(score);
  }
  vocab.unk = 0;
  vocab.bos = 1;
  vocab.eos = 2;
  vocab.add_bos = true;
  vocab.add_space_prefix = true;
  return vocab;
}

std::vector<std::string> pieces_of(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(tokenizer.vocab().tokens[id]);
  return pieces;
}

TEST(SpmTokenizer, MatchesGoldenEncodings) {
  MKV_REQUIRE_ASSET(gguf, "stories260K.gguf");
  MKV_REQUIRE_ASSET(golden, "golden/stories260K_golden.json");
  const auto tokenizer = load_stories_tokenizer(gguf);
  const json cases = json::parse(test::read_file(golden))["tok512_encodings"]["cases"];
  ASSERT_GE(cases.size(), 6u);
  for (const auto& [text, expected] : cases.items()) {
    EXPECT_EQ(tokenizer->encode(text, false, false), expected.get<std::vector<int32_t>>()) << text;
    std::vector<int32_t> with_bos = {1};
    for (int32_t id : expected) with_bos.push_back(id);
    EXPECT_EQ(tokenizer->encode(text, true, false), with_bos) << text;
  }
}

// The golden's 512 ids are BOS + the encoding of the first 3000 characters of the file. The text
// has no runs of spaces there, so SentencePiece's remove_extra_whitespaces (which the Python encoder
// applied and llama.cpp does not) changes nothing, and a plain llama.cpp-style encode matches.
TEST(SpmTokenizer, MatchesTinyStoriesGoldenIds) {
  MKV_REQUIRE_ASSET(gguf, "stories260K.gguf");
  MKV_REQUIRE_ASSET(golden, "golden/stories260K_golden.json");
  MKV_REQUIRE_ASSET(text_path, "text/tinystories_val.txt");
  const auto tokenizer = load_stories_tokenizer(gguf);
  const auto expected =
      json::parse(test::read_file(golden))["tinystories_val_nll"]["input_ids"].get<std::vector<int32_t>>();
  const std::string text = test::read_file(text_path).substr(0, 3000);  // ASCII there: bytes = chars
  ASSERT_EQ(text.find("  "), std::string::npos);
  std::vector<int32_t> ids = tokenizer->encode(text, true, false);
  ASSERT_GE(ids.size(), expected.size());
  ids.resize(expected.size());
  EXPECT_EQ(ids, expected);
}

TEST(SpmTokenizer, RoundTripsText) {
  MKV_REQUIRE_ASSET(gguf, "stories260K.gguf");
  const auto tokenizer = load_stories_tokenizer(gguf);
  const std::vector<std::string> texts = {
      "Once upon a time",
      " leading space and  two spaces, trailing space ",
      "Tabs\tand\nnewlines\n\n\"quotes\" 'single' 12345 3.14",
      "na\xC3\xAFve caf\xC3\xA9 \xE2\x98\x83 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80 \xD0\x9F\xD1\x80\xD0\xB8",
      "<s> and </s> are plain text without parse_special",
      "",
  };
  for (const auto& text : texts) {
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, true, false)), text) << text;
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, false, false)), text) << text;
  }
}

TEST(SpmTokenizer, ParsesControlTokensOnlyWhenAsked) {
  MKV_REQUIRE_ASSET(gguf, "stories260K.gguf");
  const auto tokenizer = load_stories_tokenizer(gguf);
  const std::string text = "Hi</s>Bye";
  const auto parsed = tokenizer->encode(text, false, true);
  // A space prefix also follows each special token, as in llama.cpp.
  std::vector<int32_t> expected = tokenizer->encode("Hi", false, false);
  expected.push_back(2);
  for (int32_t id : tokenizer->encode("Bye", false, false)) expected.push_back(id);
  EXPECT_EQ(parsed, expected);
  const auto plain = tokenizer->encode(text, false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tokenizer->decode(parsed), "Hi Bye");
  EXPECT_EQ(tokenizer->decode(parsed, true), "Hi</s> Bye");
}

TEST(SpmTokenizer, RendersPieces) {
  MKV_REQUIRE_ASSET(gguf, "stories260K.gguf");
  const auto tokenizer = load_stories_tokenizer(gguf);
  EXPECT_EQ(tokenizer->token_to_piece(1), "");
  EXPECT_EQ(tokenizer->token_to_piece(1, true), "<s>");
  EXPECT_EQ(tokenizer->token_to_piece(0), "");
  EXPECT_EQ(tokenizer->token_to_piece(0, true), "<unk>");
  EXPECT_EQ(tokenizer->token_to_piece(3 + 'A'), "A");
  EXPECT_EQ(tokenizer->token_to_piece(3 + 0xE2), "\xE2");
  EXPECT_EQ(tokenizer->token_to_piece(403), " Once");
  EXPECT_THROW(tokenizer->token_to_piece(512), MkvError);
  EXPECT_THROW(tokenizer->token_to_piece(-1), MkvError);
  EXPECT_TRUE(tokenizer->is_end_of_generation(2));
  EXPECT_FALSE(tokenizer->is_end_of_generation(1));
}

TEST(SpmTokenizer, MergesHighestScoreFirstThenLeftmost) {
  // "▁abc": ab (score -1) beats bc (-2); with equal scores the left pair merges first.
  const std::string space = "\xE2\x96\x81";
  auto tokenizer = Tokenizer::create(
      tiny_vocab({{space, 0}, {"a", 0}, {"b", 0}, {"c", 0}, {"ab", -1}, {"bc", -2}, {space + "ab", -5}},
                 true));
  EXPECT_EQ(pieces_of(*tokenizer, tokenizer->encode("abc", false, false)),
            (std::vector<std::string>{space + "ab", "c"}));
  auto tied = Tokenizer::create(
      tiny_vocab({{space, 0}, {"a", 0}, {"b", 0}, {"c", 0}, {"ab", -1}, {"bc", -1}}, true));
  EXPECT_EQ(pieces_of(*tied, tied->encode("abc", false, false)),
            (std::vector<std::string>{space, "ab", "c"}));
  // The merge with the better score wins even when it lies to the right.
  auto right = Tokenizer::create(
      tiny_vocab({{space, 0}, {"a", 0}, {"b", 0}, {"c", 0}, {"ab", -3}, {"bc", -1}}, true));
  EXPECT_EQ(pieces_of(*right, right->encode("abc", false, false)),
            (std::vector<std::string>{space, "a", "bc"}));
}

TEST(SpmTokenizer, MergesAcrossSpacesWhenTheVocabHasSuchTokens) {
  // "a▁b" joins two words, so words cannot be merged one by one for this vocab.
  const std::string space = "\xE2\x96\x81";
  auto tokenizer = Tokenizer::create(
      tiny_vocab({{space, 0}, {"a", 0}, {"b", 0}, {"a" + space, -1}, {"a" + space + "b", -2}}, true));
  EXPECT_EQ(pieces_of(*tokenizer, tokenizer->encode("a b", false, false)),
            (std::vector<std::string>{space, "a" + space + "b"}));
}

TEST(SpmTokenizer, FallsBackToBytesThenUnknown) {
  const std::string space = "\xE2\x96\x81";
  auto with_bytes = Tokenizer::create(tiny_vocab({{space, 0}, {"a", 0}}, true));
  EXPECT_EQ(pieces_of(*with_bytes, with_bytes->encode("a\xC3\xA9", false, false)),
            (std::vector<std::string>{space, "a", "<0xC3>", "<0xA9>"}));
  auto without_bytes = Tokenizer::create(tiny_vocab({{space, 0}, {"a", 0}}, false));
  EXPECT_EQ(without_bytes->encode("a\xC3\xA9", false, false), (std::vector<int32_t>{3, 4, 0, 0}));
  Vocab no_unknown = tiny_vocab({{space, 0}, {"a", 0}}, false);
  no_unknown.unk = -1;
  EXPECT_THROW(Tokenizer::create(std::move(no_unknown))->encode("b", false, false), MkvError);
}

TEST(SpmTokenizer, HonoursVocabFlags) {
  const std::string space = "\xE2\x96\x81";
  Vocab vocab = tiny_vocab({{space, 0}, {"a", 0}}, true);
  vocab.add_space_prefix = false;
  vocab.add_bos = false;
  vocab.add_eos = true;
  auto tokenizer = Tokenizer::create(std::move(vocab));
  EXPECT_EQ(pieces_of(*tokenizer, tokenizer->encode("a a", true, false)),
            (std::vector<std::string>{"a", space, "a", "</s>"}));
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(" a", false, false)), " a");
}

TEST(SpmTokenizer, RejectsBadVocab) {
  Vocab no_scores = tiny_vocab({{"a", 0}}, true);
  no_scores.scores.clear();
  EXPECT_THROW(Tokenizer::create(std::move(no_scores)), MkvError);
  Vocab bad_byte = tiny_vocab({{"a", 0}}, true);
  bad_byte.tokens[3] = "<0xZZ>";
  EXPECT_THROW(Tokenizer::create(std::move(bad_byte)), MkvError);
  Vocab unknown_model = tiny_vocab({{"a", 0}}, true);
  unknown_model.model = "wordpiece";
  EXPECT_THROW(Tokenizer::create(std::move(unknown_model)), MkvError);
}

TEST(SpmTokenizer, EncodesAMegabyteQuickly) {
  MKV_REQUIRE_ASSET(gguf, "stories260K.gguf");
  MKV_REQUIRE_ASSET(text_path, "text/tinystories_val.txt");
  const auto tokenizer = load_stories_tokenizer(gguf);
  std::string text = test::read_file(text_path);
  while (text.size() < (1u << 20)) text += text;
  text.resize(1u << 20);
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tokenizer->encode(text, true, false);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("encoded 1 MiB into %zu tokens in %.3f s\n", ids.size(), seconds);
  EXPECT_GT(ids.size(), 300000u);
#ifdef NDEBUG
  EXPECT_LT(seconds, 1.0);
#endif
}

}  // namespace
}  // namespace mkv
