// Text <-> token ids. Two implementations: SentencePiece-style ("llama" vocab, scores + byte
// fallback) and byte-level BPE ("gpt2" vocab, merges + pre-tokenizer regex).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace mkv {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // add_special: prepend BOS / append EOS as the vocab's add_bos/add_eos say.
  // parse_special: recognise control/user-defined token texts inside `text` as single ids.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // The bytes a token stands for (byte tokens decoded; control tokens give their text only when
  // render_special is true, otherwise "").
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;

  // Concatenated pieces. SentencePiece drops the leading space that encode() added.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  const Vocab& vocab() const { return vocab_; }
  int32_t n_vocab() const { return vocab_.size(); }
  // End of generation: eos, eot, and other ids the vocab marks as such.
  bool is_end_of_generation(int32_t id) const;

  // Chooses the implementation from vocab.model; throws MkvError for unknown models.
  static std::unique_ptr<Tokenizer> create(Vocab vocab);

 protected:
  explicit Tokenizer(Vocab vocab);

  // A piece of encode()'s input: raw text still to tokenize (token < 0), or a special token
  // recognised in the text (`text` is then its occurrence).
  struct TextFragment {
    std::string_view text;
    int32_t token = -1;
  };
  // llama.cpp's special-token partition: USER_DEFINED token texts are always split out, CONTROL
  // and UNKNOWN ones only with parse_special; longer texts are matched first.
  std::vector<TextFragment> split_special_tokens(std::string_view text, bool parse_special) const;

  Vocab vocab_;
  std::vector<int32_t> end_of_generation_;  // sorted ids
  std::vector<int32_t> special_tokens_;     // CONTROL/USER_DEFINED/UNKNOWN ids, longest text first
};

// Streams token pieces to text without ever emitting half a UTF-8 character: push() returns the
// complete characters available so far; flush() returns whatever is left.
class Utf8Streamer {
 public:
  std::string push(std::string_view piece);
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace mkv
