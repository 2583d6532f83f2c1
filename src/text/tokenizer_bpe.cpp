#include "text/tokenizer_bpe.h"

#include <queue>

#include "core/error.h"
#include "text/byte_unicode.h"

namespace mkv {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

}  // namespace

BpeTokenizer::FlatTable::FlatTable(std::size_t n_entries) {
  std::size_t size = 16;
  while (size * 3 < n_entries * 4) size *= 2;
  slots_.resize(size);
  mask_ = size - 1;
}

uint64_t BpeTokenizer::FlatTable::mix(uint64_t key) {  // splitmix64's finaliser
  key = (key ^ (key >> 30)) * 0xBF58476D1CE4E5B9ULL;
  key = (key ^ (key >> 27)) * 0x94D049BB133111EBULL;
  return key ^ (key >> 31);
}

BpeTokenizer::BpeTokenizer(Vocab vocab)
    : Tokenizer(std::move(vocab)),
      pre_tokenizer_(vocab_.pre),
      id_of_text_(vocab_.tokens.size()),
      merges_(vocab_.merges.size()) {
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
  for (int32_t id = 0; id < n_vocab; ++id) {
    const std::string& text = vocab_.tokens[id];
    const uint64_t hash = std::hash<std::string_view>{}(text);
    id_of_text_.probe(hash, [&](const FlatTable::Slot& slot) {
      return vocab_.tokens[slot.first] == text;
    }) = {hash, id};  // like llama.cpp, the last duplicate wins
  }
  for (int b = 0; b < 256; ++b) id_of_byte_[b] = id_of_text(byte_to_unicode(uint8_t(b)));

  std::string merged;  // left + right, reused
  for (std::size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const std::string_view line = vocab_.merges[rank];
    const std::size_t space = line.find(' ', 1);  // from 1: a part is never empty
    MKV_CHECK(space != std::string::npos && space + 1 < line.size(),
              "tokenizer.ggml.merges[{}] = '{}' is not of the form 'left right'", rank, line);
    const std::string_view left = line.substr(0, space), right = line.substr(space + 1);
    merged.assign(left).append(right);
    const int32_t left_id = id_of_text(left), right_id = id_of_text(right);
    const int32_t result_id = id_of_text(merged);
    if (left_id < 0 || right_id < 0 || result_id < 0) continue;  // can never fire
    const uint64_t key = pair_key(left_id, right_id);
    auto& slot = merges_.probe(key, [](const FlatTable::Slot&) { return true; });
    if (slot.first < 0) slot = {key, int32_t(rank), result_id};  // like llama.cpp, the first wins
  }
}

int32_t BpeTokenizer::id_of_text(std::string_view text) const {
  const auto* slot =
      id_of_text_.find(std::hash<std::string_view>{}(text),
                       [&](const FlatTable::Slot& s) { return vocab_.tokens[s.first] == text; });
  return slot ? slot->first : -1;
}

const BpeTokenizer::FlatTable::Slot* BpeTokenizer::find_merge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  return merges_.find(pair_key(left, right), [](const FlatTable::Slot&) { return true; });
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos) ids.push_back(vocab_.bos);
  PieceCache cache;
  for (const TextFragment& fragment : split_special_tokens(text, parse_special)) {
    if (fragment.token >= 0)
      ids.push_back(fragment.token);
    else
      encode_raw_text(fragment.text, cache, ids);
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
    if (const int32_t id = id_of_text(bytes_to_unicode(bytes)); id >= 0) {
      out.push_back(id);
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
    if (const auto* merge = find_merge(symbols[left].id, symbols[right].id))
      queue.push({merge->first, left, right, symbols[left].id, symbols[right].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_candidate(i, i + 1);

  while (!queue.empty()) {
    const Candidate candidate = queue.top();
    queue.pop();
    Symbol& left = symbols[candidate.left];
    Symbol& right = symbols[candidate.right];
    if (left.id != candidate.left_id || right.id != candidate.right_id ||
        left.next != candidate.right)
      continue;  // stale
    left.id = find_merge(left.id, right.id)->second;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = candidate.left;
    push_candidate(left.prev, candidate.left);
    push_candidate(candidate.left, left.next);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next)
    if (symbols[i].id >= 0) out.push_back(symbols[i].id);
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (id < 0 || id >= vocab_.size()) return {};
  const std::string& text = vocab_.tokens[id];
  switch (vocab_.types[id]) {
    case TokenType::NORMAL:  // stored in the byte mapping; a text outside it is kept as is
      return unicode_to_bytes(text).value_or(text);
    case TokenType::USER_DEFINED:  // added tokens are stored as plain text
      return text;
    case TokenType::CONTROL:
    case TokenType::UNKNOWN:
      return render_special ? text : std::string();
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
    if (i > 0 && text[i - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ','))
      pass1.pop_back();
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
