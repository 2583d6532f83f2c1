// Byte-level BPE tokenizer: every row of the llama.cpp goldens (Llama-3 and Qwen3 vocabularies),
// the pre-tokenizer and byte mapping on their own, bad input, and a throughput measurement.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "text/byte_unicode.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_bpe.h"

namespace mkv {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

// Loads each golden vocab once per test binary (reading it is part of what is measured).
const BpeTokenizer& golden_tokenizer(const std::filesystem::path& gguf) {
  static std::map<std::filesystem::path, std::unique_ptr<BpeTokenizer>> loaded;
  auto& slot = loaded[gguf];
  if (!slot) {
    const auto start = Clock::now();
    slot = std::make_unique<BpeTokenizer>(Vocab::from_gguf(GgufFile::open(gguf.string())));
    std::printf("[ vocab    ] %s: %d tokens loaded in %.0f ms\n", gguf.filename().c_str(),
                slot->n_vocab(), seconds_since(start) * 1e3);
  }
  return *slot;
}

// Checks every row of <name>.jsonl against <name>-vocab.gguf; reports rows passing.
void check_golden_rows(const std::filesystem::path& folder, const std::string& name) {
  const BpeTokenizer& tokenizer = golden_tokenizer(folder / (name + "-vocab.gguf"));
  std::ifstream lines(folder / (name + ".jsonl"));
  std::string line;
  int rows = 0, passing = 0;
  while (std::getline(lines, line)) {
    const auto row = nlohmann::json::parse(line);
    const std::string text = from_hex(row["text_utf8_hex"]);
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    const auto ids_special = row["ids_special"].get<std::vector<int32_t>>();
    SCOPED_TRACE(name + " row " + std::to_string(row["i"].get<int>()) + ": " + row["text"].dump());
    bool row_ok = true;
    const auto expect_same = [&](const std::string& field, const auto& got, const auto& want) {
      if (got == want) return;
      row_ok = false;
      ADD_FAILURE() << field << ": got " << nlohmann::json(got).dump() << ", want "
                    << nlohmann::json(want).dump();
    };
    expect_same("ids", tokenizer.encode(text, false, false), ids);
    expect_same("ids_special", tokenizer.encode(text, false, true), ids_special);
    expect_same("ids_add_special", tokenizer.encode(text, true, false),
                row["ids_add_special"].get<std::vector<int32_t>>());
    expect_same("detok", tokenizer.detokenize(ids, false), row["detok"].get<std::string>());
    expect_same("detok_special", tokenizer.detokenize(ids_special, true),
                row["detok_special"].get<std::string>());
    // Without space cleaning, decoding gives back the text exactly.
    expect_same("decode", tokenizer.decode(ids_special, true), text);
    ++rows;
    passing += row_ok;
  }
  std::printf("[ golden   ] %s.jsonl: %d/%d rows pass\n", name.c_str(), passing, rows);
  EXPECT_EQ(rows, 172);
}

TEST(BpeTokenizerGolden, Llama3EveryRow) {
  MKV_REQUIRE_ASSET(folder, "golden/tokenizer/llama3.jsonl");
  check_golden_rows(folder.parent_path(), "llama3");
}

TEST(BpeTokenizerGolden, Qwen3EveryRow) {
  MKV_REQUIRE_ASSET(folder, "golden/tokenizer/qwen3.jsonl");
  check_golden_rows(folder.parent_path(), "qwen3");
}

// Throughput on ~1 MB of English prose (reported, not asserted: machines differ).
TEST(BpeTokenizerGolden, MeasuresThroughputOnOneMegabyte) {
  MKV_REQUIRE_ASSET(vocab, "golden/tokenizer/llama3-vocab.gguf");
  MKV_REQUIRE_ASSET(book, "text/frankenstein.txt");
  MKV_REQUIRE_ASSET(stories, "text/tinystories_val.txt");
  std::string text = test::read_file(book) + test::read_file(stories);
  text.resize(std::min<std::size_t>(text.size(), 1 << 20));
  for (const char* name : {"llama3", "qwen3"}) {
    const BpeTokenizer& tokenizer =
        golden_tokenizer(vocab.parent_path() / (std::string(name) + "-vocab.gguf"));
    const auto start = Clock::now();
    const auto ids = tokenizer.encode(text, false, true);
    const double encode_s = seconds_since(start);
    const auto decode_start = Clock::now();
    const std::string decoded = tokenizer.decode(ids);
    const double decode_s = seconds_since(decode_start);
    std::printf(
        "[ speed    ] %s: %.2f MB -> %zu tokens, encode %.0f ms (%.1f MB/s), decode %.0f ms\n",
        name, text.size() / 1e6, ids.size(), encode_s * 1e3, text.size() / 1e6 / encode_s,
        decode_s * 1e3);
    EXPECT_EQ(decoded, text);
  }
}

// ---- hand-made vocabulary: behaviour that the goldens do not pin down ----

// A tiny byte-level vocab: all 256 byte tokens, then "ab", "abc", " x", and two control tokens.
Vocab tiny_vocab(std::string pre = "qwen2") {
  Vocab vocab;
  vocab.model = "gpt2";
  vocab.pre = std::move(pre);
  for (int b = 0; b < 256; ++b) vocab.tokens.emplace_back(byte_to_unicode(uint8_t(b)));
  vocab.types.assign(256, TokenType::NORMAL);
  for (const char* merged : {"ab", "abc", "Ġx"}) {
    vocab.tokens.emplace_back(merged);
    vocab.types.push_back(TokenType::NORMAL);
  }
  vocab.merges = {"a b", "ab c", "Ġ x"};
  for (const char* control : {"<s>", "<|end|>"}) {
    vocab.tokens.emplace_back(control);
    vocab.types.push_back(TokenType::CONTROL);
  }
  vocab.bos = 259;
  vocab.eos = 260;
  return vocab;
}

TEST(BpeTokenizer, MergesByRankAndRendersControlTokensOnlyWhenAsked) {
  BpeTokenizer tokenizer(tiny_vocab());
  EXPECT_EQ(tokenizer.encode("abc x", false, false), (std::vector<int32_t>{257, 258}));
  EXPECT_EQ(tokenizer.encode("abab", false, false), (std::vector<int32_t>{256, 256}));
  EXPECT_EQ(tokenizer.encode("<s>ab", false, true), (std::vector<int32_t>{259, 256}));
  EXPECT_EQ(tokenizer.encode("<s>", false, false).size(), 3u);  // '<' 's' '>' bytes
  EXPECT_EQ(tokenizer.token_to_piece(259), "");
  EXPECT_EQ(tokenizer.token_to_piece(259, true), "<s>");
  EXPECT_EQ(tokenizer.token_to_piece(258), " x");
  EXPECT_EQ(tokenizer.token_to_piece(-1), "");
  EXPECT_EQ(tokenizer.token_to_piece(100000), "");
}

TEST(BpeTokenizer, AddsBosAndEosAsTheVocabSays) {
  Vocab vocab = tiny_vocab();
  vocab.add_bos = vocab.add_eos = true;
  BpeTokenizer tokenizer(std::move(vocab));
  EXPECT_EQ(tokenizer.encode("ab", true, false), (std::vector<int32_t>{259, 256, 260}));
  EXPECT_EQ(tokenizer.encode("ab", false, false), (std::vector<int32_t>{256}));
}

// Invalid UTF-8: each byte that is not part of a valid sequence is tokenized as U+FFFD (what
// llama.cpp does for bytes its decoder rejects), so encoding never fails and the output decodes
// to valid UTF-8.
TEST(BpeTokenizer, InvalidUtf8BecomesReplacementCharacters) {
  BpeTokenizer tokenizer(tiny_vocab());
  const std::string replacement = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"a\xFF"
       "b",
       "a" + replacement + "b"},                // byte that never starts a sequence
      {"\xE4\xB8", replacement + replacement},  // truncated 3-byte sequence
      {"\x80x", replacement + "x"},             // lone continuation byte
      {"\xC0\x80", replacement + replacement},  // overlong NUL
      {"\xED\xA0\x80", replacement + replacement + replacement},  // UTF-16 surrogate
  };
  for (const auto& [bad, repaired] : cases) {
    SCOPED_TRACE(repaired);
    EXPECT_EQ(tokenizer.encode(bad, false, false), tokenizer.encode(repaired, false, false));
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(bad, false, false)), repaired);
  }
}

// Any byte string: encoding never fails and decodes to its repaired form.
TEST(BpeTokenizer, RandomBytesRoundTripToTheirRepairedForm) {
  for (const char* pre : {"llama-bpe", "qwen2", "gpt-2", "default"}) {
    BpeTokenizer tokenizer(tiny_vocab(pre));
    std::mt19937 random(7);
    for (int trial = 0; trial < 500; ++trial) {
      std::string bytes(random() % 40, '\0');
      for (char& c : bytes) c = char(random() % 4 == 0 ? random() % 256 : 32 + random() % 96);
      std::string repaired;
      const std::string expected(repair_utf8(bytes, repaired));
      EXPECT_EQ(tokenizer.decode(tokenizer.encode(bytes, false, true)), expected) << pre;
    }
  }
}

TEST(BpeTokenizer, LongRunsDoNotExhaustTheRegexEngine) {
  BpeTokenizer tokenizer(tiny_vocab("llama-bpe"));
  for (const std::string& run : {std::string(1 << 20, ' '), std::string(1 << 20, 'a'),
                                 std::string(1 << 18, '\n') + "x", std::string(1 << 18, '7')}) {
    const auto ids = tokenizer.encode(run, false, false);
    EXPECT_EQ(tokenizer.decode(ids), run);
  }
}

TEST(BpeTokenizer, RejectsAVocabularyWithoutUsableMerges) {
  Vocab no_merges = tiny_vocab();
  no_merges.merges.clear();
  EXPECT_THROW(
      {
        try {
          BpeTokenizer tokenizer(std::move(no_merges));
        } catch (const MkvError& e) {
          EXPECT_NE(std::string(e.what()).find("no merges"), std::string::npos) << e.what();
          throw;
        }
      },
      MkvError);
  Vocab bad_merge = tiny_vocab();
  bad_merge.merges.push_back("abc");
  EXPECT_THROW(BpeTokenizer(std::move(bad_merge)), MkvError);
  Vocab bad_bos = tiny_vocab();
  bad_bos.add_bos = true;
  bad_bos.bos = -1;
  EXPECT_THROW(BpeTokenizer(std::move(bad_bos)), MkvError);
}

TEST(BpeTokenizer, UnknownPreTokenizerIsAnError) {
  try {
    BpeTokenizer tokenizer(tiny_vocab("made-up"));
    FAIL() << "expected MkvError";
  } catch (const MkvError& e) {
    EXPECT_NE(std::string(e.what()).find("'made-up'"), std::string::npos) << e.what();
  }
}

TEST(BpeTokenizer, TokenizerCreateChoosesBpeForGpt2Vocabularies) {
  const auto tokenizer = Tokenizer::create(tiny_vocab());
  EXPECT_NE(dynamic_cast<const BpeTokenizer*>(tokenizer.get()), nullptr);
  EXPECT_EQ(tokenizer->encode("abc", false, false), (std::vector<int32_t>{257}));
}

// ---- pieces ----

std::vector<std::string> split(const PreTokenizer& pre, std::string_view text) {
  std::vector<std::string_view> views;
  pre.split(text, views);
  return {views.begin(), views.end()};
}

TEST(PreTokenizer, SplitsLikeLlamaCpp) {
  const PreTokenizer llama3("llama-bpe"), qwen2("qwen2"), gpt2("gpt-2"), fallback("default");
  using Pieces = std::vector<std::string>;
  EXPECT_EQ(split(llama3, "Hello world 12345 it's"),
            (Pieces{"Hello", " world", " ", "123", "45", " it", "'s"}));
  EXPECT_EQ(split(qwen2, "x 123"), (Pieces{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(split(llama3, "a  \n\n b"), (Pieces{"a", "  \n\n", " b"}));
  EXPECT_EQ(split(gpt2, "Hi  there"), (Pieces{"Hi", " ", " there"}));
  EXPECT_EQ(split(fallback, "a+b=1234"), (Pieces{"a", "+", "b", "=", "123", "4"}));
  EXPECT_TRUE(llama3.ignore_merges());
  EXPECT_FALSE(qwen2.ignore_merges());
  EXPECT_FALSE(qwen2.clean_spaces());
  EXPECT_TRUE(llama3.clean_spaces());
}

TEST(ByteUnicode, MappingIsABijectionOnBytes) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += char(b);
  EXPECT_EQ(byte_to_unicode(' '), "Ġ");
  EXPECT_EQ(byte_to_unicode('\n'), "Ċ");
  EXPECT_EQ(byte_to_unicode('a'), "a");
  EXPECT_EQ(unicode_to_bytes(bytes_to_unicode(all_bytes)), all_bytes);
  EXPECT_EQ(unicode_to_bytes("<|im_start|>"), "<|im_start|>");
  EXPECT_EQ(unicode_to_bytes("€"), std::nullopt);  // U+20AC is outside the mapping
}

TEST(CleanUpTokenizationSpaces, MatchesLlamaCppPasses) {
  EXPECT_EQ(clean_up_tokenization_spaces("a , b . c ! d ?"), "a, b. c! d?");
  EXPECT_EQ(clean_up_tokenization_spaces("x ' y"), "x'y");
  EXPECT_EQ(clean_up_tokenization_spaces("he 's I 'm we 're you 've it 't I 'd we 'll"),
            "he's I'm we're you've it 't I 'd we 'll");
  EXPECT_EQ(clean_up_tokenization_spaces(""), "");
}

}  // namespace
}  // namespace mkv
