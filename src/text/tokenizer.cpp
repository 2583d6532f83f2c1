#include "text/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "text/tokenizer_bpe.h"
#include "text/tokenizer_spm.h"

namespace mkv {
namespace {

void check_vocab(const Vocab& vocab) {
  const size_t n = vocab.tokens.size();
  MKV_CHECK(n > 0, "tokenizer: the vocabulary is empty");
  MKV_CHECK(vocab.types.size() == n, "tokenizer: {} token types for {} tokens", vocab.types.size(), n);
  MKV_CHECK(vocab.scores.empty() || vocab.scores.size() == n, "tokenizer: {} scores for {} tokens",
            vocab.scores.size(), n);
  for (int32_t id : {vocab.bos, vocab.eos, vocab.eot, vocab.unk, vocab.pad})
    MKV_CHECK(id >= -1 && id < vocab.size(), "tokenizer: special token id {} is outside the vocab ({})",
              id, n);
}

// Bytes in the valid UTF-8 sequence that starts with `lead`; 0 when `lead` cannot start one.
int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `byte` may follow `lead` at position `index` (>= 1) of a sequence (RFC 3629 table:
// no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_continuation(uint8_t lead, int index, uint8_t byte) {
  uint8_t lo = 0x80, hi = 0xBF;
  if (index == 1) {
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  }
  return byte >= lo && byte <= hi;
}

// Length of the longest prefix of `bytes` that can be emitted now: complete characters and bytes
// that can never become part of a valid character. Only a valid but unfinished sequence at the end
// is held back.
size_t emittable_prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<uint8_t>(bytes[i]);
    const int length = utf8_sequence_length(lead);
    int valid = 1;  // bytes of the sequence checked so far
    while (valid < length && i + valid < bytes.size() &&
           valid_continuation(lead, valid, static_cast<uint8_t>(bytes[i + valid])))
      ++valid;
    if (length > 0 && valid < length && i + valid == bytes.size()) return i;  // wait for more
    i += (length > 0 && valid == length) ? length : 1;  // a character, or one invalid byte
  }
  return i;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  check_vocab(vocab_);
  vocab_.detect_special_tokens();
  end_of_generation_ = vocab_.end_of_generation_ids();
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const TokenType type = vocab_.types[id];
    if ((type == TokenType::CONTROL || type == TokenType::USER_DEFINED || type == TokenType::UNKNOWN) &&
        !vocab_.tokens[id].empty())
      special_tokens_.push_back(id);
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](int32_t a, int32_t b) {
    return vocab_.tokens[a].size() > vocab_.tokens[b].size();
  });
}

std::unique_ptr<Tokenizer> Tokenizer::create(Vocab vocab) {
  if (vocab.model == "llama") return make_spm_tokenizer(std::move(vocab));
  if (vocab.model == "gpt2") return make_bpe_tokenizer(std::move(vocab));
  fail("tokenizer model '{}' is not supported (expected 'llama' or 'gpt2')", vocab.model);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  // encode() put a space in front of the text: drop it from the first non-control piece.
  bool strip_prefix_space = vocab_.add_space_prefix;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip_prefix_space && vocab_.types[id] != TokenType::CONTROL) {
      if (!piece.empty() && piece.front() == ' ') piece.erase(0, 1);
      strip_prefix_space = false;
    }
    text += piece;
  }
  return text;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(end_of_generation_.begin(), end_of_generation_.end(), id);
}

std::vector<Tokenizer::TextFragment> Tokenizer::split_special_tokens(std::string_view text,
                                                                     bool parse_special) const {
  std::vector<TextFragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({text, -1});
  std::vector<TextFragment> next;  // fragments after splitting on the current special token
  for (int32_t id : special_tokens_) {
    const TokenType type = vocab_.types[id];
    if (!parse_special && type != TokenType::USER_DEFINED) continue;
    const std::string& special = vocab_.tokens[id];
    next.clear();
    for (const TextFragment& fragment : fragments) {
      if (fragment.token >= 0) {
        next.push_back(fragment);
        continue;
      }
      std::string_view rest = fragment.text;
      for (size_t at; (at = rest.find(special)) != std::string_view::npos;) {
        if (at > 0) next.push_back({rest.substr(0, at), -1});
        next.push_back({rest.substr(at, special.size()), id});
        rest.remove_prefix(at + special.size());
      }
      if (!rest.empty()) next.push_back({rest, -1});
    }
    fragments.swap(next);
  }
  return fragments;
}

std::string Utf8Streamer::push(std::string_view piece) {
  pending_ += piece;
  const size_t ready = emittable_prefix(pending_);
  std::string out = pending_.substr(0, ready);
  pending_.erase(0, ready);
  return out;
}

std::string Utf8Streamer::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace mkv
