// Byte-level BPE tokenizer for GGUF vocabularies with tokenizer.ggml.model = "gpt2" (Llama-3,
// Qwen2/2.5/3, GPT-2), following llama.cpp's llm_tokenizer_bpe so that ids match it exactly.
//
// encode(text):
//   1. Special tokens: CONTROL/UNKNOWN token texts are cut out of the text only with
//      parse_special; USER_DEFINED ones always. Longest token text first, each splitting the raw
//      stretches left by the previous ones (llama.cpp's tokenizer_st_partition).
//   2. Each raw stretch is repaired to valid UTF-8 (every undecodable byte becomes U+FFFD, as
//      llama.cpp does), then split by the PreTokenizer regex.
//   3. Each pre-token: if ignore_merges and the whole pre-token is a token, that token; otherwise
//      start from one symbol per byte and repeatedly merge the adjacent pair with the lowest merge
//      rank (leftmost on ties).
//   4. BOS/EOS per vocab.add_bos/add_eos when add_special.
//
// Vocabulary requirements (MkvError otherwise): a non-empty merges list of "left right" lines.
// Merges whose parts or result are not tokens cannot fire and are ignored; bytes whose mapped
// character is not a token are dropped from the output (llama.cpp drops them too).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/pretokenizer.h"
#include "model/tokenizer.h"

namespace mkv {

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(Vocab vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  // NORMAL tokens: their bytes. USER_DEFINED: their text. CONTROL/UNKNOWN: their text only when
  // render_special. UNUSED and out-of-range ids: "".
  std::string token_to_piece(int32_t id, bool render_special = false) const override;

  // llama_detokenize: the pieces joined, then cleaned of spaces when the pre-tokenizer says so.
  std::string detokenize(std::span<const int32_t> ids, bool render_special = false) const;

  const PreTokenizer& pre_tokenizer() const { return pre_tokenizer_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // id of the merged token
  };
  // Heterogeneous hashing so that the per-call cache of pre-token ids is probed with views.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using PieceCache = std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>>;

  void build_tables();
  void encode_raw_text(std::string_view text, PieceCache& cache, std::vector<int32_t>& out) const;
  void encode_pre_token(std::string_view bytes, std::vector<int32_t>& out) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  PreTokenizer pre_tokenizer_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>
      id_of_bytes_;                                        // decoded NORMAL token bytes -> id
  int32_t id_of_byte_[256];                                // single-byte tokens, -1 when missing
  std::unordered_map<uint64_t, Merge> merges_;             // (left id << 32 | right id) -> merge
  std::vector<std::string> pieces_;                        // (n_vocab) bytes each token stands for
};

// llama.cpp's clean_spaces passes: " ?" " !" " ." " ," lose the space, " ' " becomes "'", and
// " 's" " 'm" " 're" " 've" lose the space.
std::string clean_up_tokenization_spaces(std::string_view text);

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab);

}  // namespace mkv
