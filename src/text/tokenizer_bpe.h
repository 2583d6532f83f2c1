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
// character is not a token are dropped from the output (llama.cpp drops them too). A token text
// that occurs twice maps to the later id, as in llama.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/pretokenizer.h"
#include "text/tokenizer.h"

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
  // Open-addressing hash table (linear probing, load <= 3/4) of 64-bit keys to two int32s; a
  // flat array keeps the 100k+-entry lookups of loading and encoding cache-friendly.
  class FlatTable {
   public:
    struct Slot {
      uint64_t key;
      int32_t first = -1, second = -1;  // first < 0: empty slot
    };
    explicit FlatTable(std::size_t n_entries);
    // The slot holding `key` for which same(slot) is true, or the empty slot where it belongs.
    template <typename Same>
    Slot& probe(uint64_t key, Same same) {
      return slots_[index_of(key, same)];
    }
    template <typename Same>
    const Slot* find(uint64_t key, Same same) const {
      const Slot& slot = slots_[index_of(key, same)];
      return slot.first < 0 ? nullptr : &slot;
    }

   private:
    template <typename Same>
    std::size_t index_of(uint64_t key, Same same) const {
      for (std::size_t i = mix(key) & mask_;; i = (i + 1) & mask_)
        if (slots_[i].first < 0 || (slots_[i].key == key && same(slots_[i]))) return i;
    }
    static uint64_t mix(uint64_t key);
    std::vector<Slot> slots_;
    std::size_t mask_;
  };
  // Heterogeneous hashing so that the per-call cache of pre-token ids is probed with views.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using PieceCache =
      std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>>;

  void build_tables();
  // -1 when `text` (in the stored, byte-mapped form) is not a token.
  int32_t id_of_text(std::string_view text) const;
  // The merge of two adjacent tokens as {rank, merged id}, or nullptr.
  const FlatTable::Slot* find_merge(int32_t left, int32_t right) const;
  void encode_raw_text(std::string_view text, PieceCache& cache, std::vector<int32_t>& out) const;
  void encode_pre_token(std::string_view bytes, std::vector<int32_t>& out) const;

  PreTokenizer pre_tokenizer_;
  FlatTable id_of_text_;     // hash of a token text -> {id}
  FlatTable merges_;         // (left id << 32 | right id) -> {rank, merged id}
  int32_t id_of_byte_[256];  // token of each byte's mapped character, or -1
};

// llama.cpp's clean_spaces passes: " ?" " !" " ." " ," lose the space, " ' " becomes "'", and
// " 's" " 'm" " 're" " 've" lose the space.
std::string clean_up_tokenization_spaces(std::string_view text);

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab);

}  // namespace mkv
