#include "text/tokenizer_spm.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>

#include "core/error.h"

namespace mkv {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁" (U+2581), SentencePiece's space

// Bytes of the UTF-8 character that starts with `lead`, judged by its high bits only (llama.cpp's
// unicode_len_utf8): stray continuation bytes count as one-byte characters.
size_t utf8_char_length(char lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[static_cast<uint8_t>(lead) >> 4];
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0;;) {
    size_t at = text.find(from, pos);
    out.append(text.substr(pos, at - pos));
    if (at == std::string_view::npos) return out;
    out.append(to);
    pos = at + from.size();
  }
}

// The byte a byte token "<0xXX>" stands for.
char parse_byte_token(const std::string& text, int32_t id) {
  auto hex_digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    fail("tokenizer: byte token {} has text '{}', expected <0xXX>", id, text);
  };
  MKV_CHECK(text.size() == 6 && text.starts_with("<0x") && text.back() == '>',
            "tokenizer: byte token {} has text '{}', expected <0xXX>", id, text);
  return static_cast<char>(hex_digit(text[3]) * 16 + hex_digit(text[4]));
}

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {
    const int32_t n = vocab_.size();
    MKV_CHECK(vocab_.scores.size() == vocab_.tokens.size(),
              "tokenizer: SentencePiece vocab needs one score per token ({} scores, {} tokens)",
              vocab_.scores.size(), n);
    token_ids_.reserve(n);
    pieces_.resize(n);
    for (int32_t id = 0; id < n; ++id) {
      const std::string& text = vocab_.tokens[id];
      token_ids_[text] = id;  // a text stored twice maps to the later id, as in llama.cpp
      switch (vocab_.types[id]) {
        case TokenType::NORMAL: pieces_[id] = replace_all(text, kSpace, " "); break;
        case TokenType::BYTE: pieces_[id] = std::string(1, parse_byte_token(text, id)); break;
        case TokenType::CONTROL:
        case TokenType::UNKNOWN:
        case TokenType::USER_DEFINED: pieces_[id] = text; break;
        case TokenType::UNUSED:
        case TokenType::UNDEFINED: break;  // rendered as nothing
      }
    }
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int byte = 0; byte < 256; ++byte) {
      const char hex_text[] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>', '\0'};
      const char raw_text[] = {static_cast<char>(byte), '\0'};
      byte_tokens_[byte] = find_token(hex_text).value_or(find_token({raw_text, 1}).value_or(vocab_.unk));
    }
    words_merge_independently_ = words_merge_independently();
  }
  SpmTokenizer(const SpmTokenizer&) = delete;  // token_ids_ views into vocab_
  SpmTokenizer& operator=(const SpmTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override {
    std::vector<int32_t> ids;
    if (add_special && vocab_.add_bos && vocab_.bos >= 0) ids.push_back(vocab_.bos);
    bool after_special = true;  // the text start counts as following a special token
    for (const TextFragment& fragment : split_special_tokens(text, parse_special)) {
      if (fragment.token >= 0) {
        ids.push_back(fragment.token);
        after_special = true;
        continue;
      }
      std::string escaped = vocab_.add_space_prefix && after_special ? std::string(kSpace) : std::string();
      escaped += replace_all(fragment.text, " ", kSpace);
      encode_escaped(escaped, ids);
      after_special = false;
    }
    if (add_special && vocab_.add_eos && vocab_.eos >= 0) ids.push_back(vocab_.eos);
    return ids;
  }

  std::string token_to_piece(int32_t id, bool render_special) const override {
    MKV_CHECK(id >= 0 && id < vocab_.size(), "tokenizer: token id {} is outside the vocab ({})", id,
              vocab_.size());
    const TokenType type = vocab_.types[id];
    if (!render_special && (type == TokenType::CONTROL || type == TokenType::UNKNOWN)) return {};
    return pieces_[id];
  }

 private:
  // One character (or merged run of characters) of the word being merged; a word's symbols form a
  // linked list, and a symbol merged into its left neighbour keeps length 0.
  struct Symbol {
    size_t offset;   // in the escaped text
    size_t length;   // bytes
    int32_t prev, next;  // neighbours within the word, -1 at the ends
  };
  // A candidate merge of two adjacent symbols; `length` detects candidates made stale by a merge.
  struct Bigram {
    float score;
    int32_t left, right;
    size_t length;
  };
  struct LowerPriority {  // heap order: highest score first, then the leftmost pair
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };
  // Buffers reused for every word of one encode() call.
  struct MergeScratch {
    std::vector<Symbol> symbols;
    std::vector<Bigram> heap;
  };

  std::optional<int32_t> find_token(std::string_view text) const {
    auto it = token_ids_.find(text);
    if (it == token_ids_.end()) return std::nullopt;
    return it->second;
  }

  // Whether no token has "▁" after a non-"▁" character. Then no merge can join a character to a
  // following "▁", so each word ("▁"-run plus what follows up to the next "▁") merges on its own,
  // with the same result as merging the whole text at once, and much faster.
  bool words_merge_independently() const {
    for (const std::string& token : vocab_.tokens) {
      std::string_view rest = token;
      while (rest.starts_with(kSpace)) rest.remove_prefix(kSpace.size());
      if (rest.find(kSpace) != std::string_view::npos) return false;
    }
    return true;
  }

  void encode_escaped(std::string_view text, std::vector<int32_t>& ids) const {
    MergeScratch scratch;
    bool previous_is_space = false;
    for (size_t offset = 0; offset < text.size();) {
      const size_t length = std::min(utf8_char_length(text[offset]), text.size() - offset);
      const bool is_space = text.substr(offset, length) == kSpace;
      if (is_space && !previous_is_space && !scratch.symbols.empty() && words_merge_independently_) {
        merge_word(text, scratch, ids);
        scratch.symbols.clear();
      }
      const auto index = static_cast<int32_t>(scratch.symbols.size());
      scratch.symbols.push_back({offset, length, index - 1, index + 1});
      previous_is_space = is_space;
      offset += length;
    }
    if (!scratch.symbols.empty()) merge_word(text, scratch, ids);
  }

  // Merges the symbols of one word, best-scoring pair first, and appends the resulting ids.
  void merge_word(std::string_view text, MergeScratch& scratch, std::vector<int32_t>& ids) const {
    std::vector<Symbol>& symbols = scratch.symbols;
    std::vector<Bigram>& heap = scratch.heap;
    symbols.back().next = -1;
    heap.clear();
    auto add_candidate = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const size_t length = symbols[left].length + symbols[right].length;
      if (auto id = find_token(text.substr(symbols[left].offset, length))) {
        heap.push_back({vocab_.scores[*id], left, right, length});
        std::push_heap(heap.begin(), heap.end(), LowerPriority{});
      }
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) add_candidate(i - 1, i);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), LowerPriority{});
      const Bigram best = heap.back();
      heap.pop_back();
      Symbol& left = symbols[best.left];
      Symbol& right = symbols[best.right];
      if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) continue;
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = best.left;
      add_candidate(left.prev, best.left);
      add_candidate(best.left, left.next);
    }

    for (int32_t i = 0; i != -1; i = symbols[i].next) {
      const std::string_view piece = text.substr(symbols[i].offset, symbols[i].length);
      if (auto id = find_token(piece)) {
        ids.push_back(*id);
        continue;
      }
      for (char byte : piece) {
        const int32_t id = byte_tokens_[static_cast<uint8_t>(byte)];
        MKV_CHECK(id >= 0, "tokenizer: cannot encode byte 0x{:02X}: the vocab has no byte or unknown token",
                  static_cast<uint8_t>(byte));
        ids.push_back(id);
      }
    }
  }

  std::unordered_map<std::string_view, int32_t> token_ids_;  // text -> id; views into vocab_.tokens
  std::vector<std::string> pieces_;                          // (n_vocab) decoded text of each token
  std::array<int32_t, 256> byte_tokens_{};                   // fallback id per byte, -1 if none
  bool words_merge_independently_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab) {
  return std::make_unique<SpmTokenizer>(std::move(vocab));
}

}  // namespace mkv
