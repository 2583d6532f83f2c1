#include "model/tokenizer_bpe.h"

#include <algorithm>
#include <queue>

#include "core/error.h"
#include "model/byte_unicode.h"

namespace mkv {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

}  // namespace

BpeTokenizer::BpeTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)), pre_tokenizer_(vocab_.pre) {
  MKV_CHECK(!vocab_.merges.empty(),
            "BPE vocabulary has no merges (tokenizer.ggml.merges is missing or empty)");
  const auto check_special = [&](bool needed, int32_t id, const char* what) {
    MKV_CHECK(!needed || (id >= 0 && id < vocab_.size()),
              "BPE vocabulary asks to add {} but its {} id {} is not a token", what, what, id);
  };
  check_special(vocab_.add_bos, vocab_.bos, "BOS");
  check_special(vocab_.add_eos, vocab_.eos, "EOS");
  build_tables();
}

void BpeTokenizer::build_tables() {
  const int32_t n_vocab = vocab_.size();
  pieces_.resize(n_vocab);
  id_of_bytes_.reserve(n_vocab);
  for (int32_t id = 0; id < n_vocab; ++id) {
    const std::string& text = vocab_.tokens[id];
    if (vocab_.types[id] != TokenType::NORMAL) {
      pieces_[id] = text;  // added tokens are stored as plain text
      continue;
    }
    auto bytes = unicode_to_bytes(text);
    pieces_[id] = bytes ? *bytes : text;
    if (bytes) id_of_bytes_[std::move(*bytes)] = id;  // like llama.cpp, the last duplicate wins
  }
  for (int b = 0; b < 256; ++b) {
    const char byte = char(b);
    const auto it = id_of_bytes_.find(std::string_view(&byte, 1));
    id_of_byte_[b] = it == id_of_bytes_.end() ? -1 : it->second;
  }

  const auto id_of_text = [&](std::string_view mapped) -> int32_t {
    const auto bytes = unicode_to_bytes(mapped);
    if (!bytes) return -1;
    const auto it = id_of_bytes_.find(*bytes);
    return it == id_of_bytes_.end() ? -1 : it->second;
  };
  merges_.reserve(vocab_.merges.size());
  for (std::size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const std::string& line = vocab_.merges[rank];
    const std::size_t space = line.find(' ', 1);  // from 1: a part is never empty
    MKV_CHECK(space != std::string::npos && space + 1 < line.size(),
              "tokenizer.ggml.merges[{}] = '{}' is not of the form 'left right'", rank, line);
    const std::string_view left(line.data(), space), right(line.data() + space + 1,
                                                            line.size() - space - 1);
    const int32_t left_id = id_of_text(left), right_id = id_of_text(right);
    const int32_t result_id = id_of_text(std::string(left) + std::string(right));
    if (left_id < 0 || right_id < 0 || result_id < 0) continue;  // can never fire
    merges_.emplace(pair_key(left_id, right_id), Merge{int32_t(rank), result_id});  // first wins
  }
}

const BpeTokenizer::Merge* BpeTokenizer::find_merge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos) ids.push_back(vocab_.bos);
  PieceCache cache;
  for (const TextFragment& fragment : split_special_tokens(text, parse_special)) {
    if (fragment.token >= 0) ids.push_back(fragment.token);
    else encode_raw_text(fragment.text, cache, ids);
  }
  if (add_special && vocab_.add_eos) ids.push_back(vocab_.eos);
  return ids;
}

void BpeTokenizer::encode_raw_text(std::string_view text, PieceCache& cache,
                                   std::vector<int32_t>& out) const {
  std::string repaired;
  const std::string_view valid = repair_utf8(text, repaired);
  std::vector<std::string_view> pre_tokens;
  pre_tokenizer_.split(valid, pre_tokens);
  for (const std::string_view pre_token : pre_tokens) {
    auto it = cache.find(pre_token);
    if (it == cache.end()) {
      std::vector<int32_t> pre_token_ids;
      encode_pre_token(pre_token, pre_token_ids);
      it = cache.emplace(std::string(pre_token), std::move(pre_token_ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
}

void BpeTokenizer::encode_pre_token(std::string_view bytes, std::vector<int32_t>& out) const {
  if (pre_tokenizer_.ignore_merges()) {
    if (const auto it = id_of_bytes_.find(bytes); it != id_of_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // One symbol per byte, kept as a doubly linked list; merged-away symbols get id -1.
  struct Symbol {
    int32_t id, prev, next;
  };
  const int32_t n = int32_t(bytes.size());
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i)
    symbols[i] = {id_of_byte_[uint8_t(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1};

  // Candidate merges, lowest rank first, then leftmost; entries go stale when a side changes.
  struct Candidate {
    int32_t rank, left, right, left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_candidate = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    if (const Merge* merge = find_merge(symbols[left].id, symbols[right].id))
      queue.push({merge->rank, left, right, symbols[left].id, symbols[right].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_candidate(i, i + 1);

  while (!queue.empty()) {
    const Candidate candidate = queue.top();
    queue.pop();
    Symbol& left = symbols[candidate.left];
    Symbol& right = symbols[candidate.right];
    if (left.id != candidate.left_id || right.id != candidate.right_id || left.next != candidate.right)
      continue;  // stale
    left.id = find_merge(left.id, right.id)->result;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = candidate.left;
    right.prev = right.next = -2;  // unlinked
    push_candidate(left.prev, candidate.left);
    push_candidate(candidate.left, left.next);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next)
    if (symbols[i].id >= 0) out.push_back(symbols[i].id);
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (id < 0 || id >= vocab_.size()) return {};
  switch (vocab_.types[id]) {
    case TokenType::NORMAL:
    case TokenType::USER_DEFINED:
      return pieces_[id];
    case TokenType::CONTROL:
    case TokenType::UNKNOWN:
      return render_special ? pieces_[id] : std::string();
    default:  // UNUSED, BYTE, UNDEFINED: llama.cpp renders nothing for them in BPE vocabs
      return {};
  }
}

std::string BpeTokenizer::detokenize(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  for (const int32_t id : ids) text += token_to_piece(id, render_special);
  return pre_tokenizer_.clean_spaces() ? clean_up_tokenization_spaces(text) : text;
}

std::string clean_up_tokenization_spaces(std::string_view text) {
  // Three passes over the text, exactly as llama.cpp's detokenize applies them.
  std::string pass1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i > 0 && text[i - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ',')) pass1.pop_back();
    pass1 += c;
  }
  std::string pass2;
  std::size_t consumed_space = std::string::npos;  // llama.cpp blanks the space it drops after "'"
  for (std::size_t i = 0; i < pass1.size(); ++i) {
    const char c = pass1[i];
    if (c == '\'' && i > 0 && i + 1 < pass1.size() && pass1[i - 1] == ' ' &&
        i - 1 != consumed_space && pass1[i + 1] == ' ') {
      pass2.pop_back();  // " ' " -> "'"
      consumed_space = ++i;
    }
    pass2 += c;
  }
  std::string pass3;
  for (std::size_t i = 0; i < pass2.size(); ++i) {
    const char c = pass2[i];
    if (i > 0 && pass2[i - 1] == ' ' && c == '\'' && i + 1 < pass2.size()) {
      const char x1 = pass2[i + 1];
      const char x2 = i + 2 < pass2.size() ? pass2[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e'))
        pass3.pop_back();
    }
    pass3 += c;
  }
  return pass3;
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab) {
  return std::make_unique<BpeTokenizer>(std::move(vocab));
}

}  // namespace mkv
