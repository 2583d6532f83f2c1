// libFuzzer target for the tokenizers and the detokenising stream:
// - any text, valid UTF-8 or not, encodes to ids inside the vocabulary;
// - valid UTF-8 comes back unchanged from decode (SentencePiece, whose vocab writes spaces as
//   U+2581 and which puts a space after every special token, only for text without U+2581 and
//   without special tokens parsed);
// - the pieces streamed through Utf8Streamer come out whole characters at a time, every byte kept;
// - any id decodes without error.
// A fourth vocabulary is built from the input itself (token texts, merges, special ids), so that
// the tokenizers' tables and merge loops meet vocabularies no real model has; it must be refused
// with MkvError or tokenize like the others (ids in range, the stream keeping every byte).
// Vocabularies: llama3-vocab.gguf and qwen3-vocab.gguf of golden/tokenizer and stories260K.gguf
// (SentencePiece), from $MOMENTKV_ASSETS or ../shared/assets; without them the target exits with
// a message. Input: one byte of choices, then the text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/message_text.h"
#include "fuzz/fuzz_assets.h"
#include "fuzz/fuzz_input.h"
#include "gguf/gguf_file.h"
#include "text/tokenizer.h"

namespace {

std::vector<std::unique_ptr<mkv::Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<mkv::Tokenizer>> loaded;
  return loaded;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = mkv::utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* file :
       {"golden/tokenizer/llama3-vocab.gguf", "golden/tokenizer/qwen3-vocab.gguf", "stories260K.gguf"}) {
    const std::filesystem::path path = mkv::fuzz::shared_asset(file);
    const mkv::GgufFile gguf = mkv::GgufFile::open(path.string());
    tokenizers().push_back(mkv::Tokenizer::create(mkv::Vocab::from_gguf(gguf)));
  }
  return 0;
}

namespace {

// A vocabulary built from the input, as a GGUF's tokenizer keys would give it: the pre-tokenizer
// name up to \x02, token texts separated by \x01 up to \x03, then merges the same way. Texts like
// "<|...|>" or "<s>" are CONTROL, "<0xAB>" BYTE (SentencePiece); scores fall with the id.
std::unique_ptr<mkv::Tokenizer> tokenizer_from_input(mkv::fuzz::FuzzInput& in, bool spm) {
  const auto split = [](std::string_view list) {
    std::vector<std::string> out;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find('\x01', start), list.size());
      out.emplace_back(list.substr(start, end - start));
      start = end + 1;
    }
    return out;
  };
  mkv::Vocab vocab;
  vocab.model = spm ? "llama" : "gpt2";
  vocab.pre = std::string(in.until('\x02'));
  vocab.tokens = split(in.until('\x03'));
  if (!spm) vocab.merges = split(in.until('\x03'));
  for (std::size_t i = 0; i < vocab.tokens.size(); ++i) {
    const std::string& t = vocab.tokens[i];
    const bool control = t.starts_with("<|") || t == "<s>" || t == "</s>";
    const bool byte = spm && t.size() == 6 && t.starts_with("<0x") && t.ends_with(">");
    vocab.types.push_back(control ? mkv::TokenType::CONTROL : byte ? mkv::TokenType::BYTE : mkv::TokenType::NORMAL);
    if (spm) vocab.scores.push_back(-float(i));
  }
  const uint8_t flags = in.byte();
  vocab.add_bos = flags & 1;
  vocab.add_space_prefix = flags & 2;
  vocab.bos = (flags & 4) ? int32_t(in.byte()) : -1;
  vocab.eos = (flags & 8) ? int32_t(in.byte()) : -1;
  vocab.unk = (flags & 16) ? int32_t(in.byte()) : -1;
  try {
    return mkv::Tokenizer::create(std::move(vocab));
  } catch (const mkv::MkvError&) {
    return nullptr;  // a vocabulary the engine refuses, as from_gguf would
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mkv::fuzz::FuzzInput in(data, size);
  const uint8_t choices = in.byte();
  const bool own_vocab = choices & 32;  // else one of the real vocabularies
  std::unique_ptr<mkv::Tokenizer> own;
  if (own_vocab) {
    own = tokenizer_from_input(in, choices & 64);
    if (!own) return 0;
  }
  const mkv::Tokenizer& tokenizer = own ? *own : *tokenizers()[(choices & 3) % tokenizers().size()];
  const bool spm = tokenizer.vocab().model == "llama";
  const bool parse_special = choices & 4;
  const bool add_special = choices & 8;
  const std::string text(in.rest());

  std::vector<int32_t> ids;
  try {
    ids = tokenizer.encode(text, add_special, parse_special);
  } catch (const mkv::MkvError&) {
    // A built vocabulary may lack what a text needs (no byte token for a byte): refused, not a crash.
    mkv::fuzz::require(own_vocab, "a real vocabulary refused a text");
    return 0;
  }
  for (const int32_t id : ids) mkv::fuzz::require(id >= 0 && id < tokenizer.n_vocab(), "an id outside the vocabulary");

  // SentencePiece adds a space before the text after every special token (llama.cpp's rule), so
  // its round trip holds only without them. A built vocabulary need not round-trip at all.
  const bool spm_round_trips = !parse_special && text.find("\xE2\x96\x81") == std::string::npos;
  if (!own_vocab && !add_special && valid_utf8(text) && (!spm || spm_round_trips)) {
    const std::string decoded = tokenizer.decode(ids, /*render_special=*/parse_special);
    mkv::fuzz::require(decoded == text, "decode(encode(text)) is not the text");
  }

  // The pieces streamed whole characters at a time give decode()'s bytes.
  mkv::Utf8Streamer streamer;
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string out = streamer.push(tokenizer.token_to_piece(id, true));
    mkv::fuzz::require(out.empty() || valid_utf8(out) || !valid_utf8(text) || own_vocab,
                       "the stream emitted part of a character");
    streamed += out;
  }
  streamed += streamer.flush();
  std::string pieces;
  for (const int32_t id : ids) pieces += tokenizer.token_to_piece(id, true);
  mkv::fuzz::require(streamed == pieces, "the stream lost or changed bytes");

  // Ids from the input bytes decode without error, whatever they are.
  std::vector<int32_t> any_ids;
  for (std::size_t i = 0; i + 4 <= text.size() && any_ids.size() < 64; i += 4) {
    uint32_t raw;
    memcpy(&raw, text.data() + i, 4);
    any_ids.push_back(int32_t(raw % uint32_t(tokenizer.n_vocab())));
  }
  (void)tokenizer.decode(any_ids, choices & 16);
  return 0;
}
