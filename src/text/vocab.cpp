#include "text/vocab.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace mkv {
namespace {

constexpr std::string_view kPrefix = "tokenizer.ggml.";

// Token texts llama.cpp takes as the end-of-turn token when the file names none, in priority order.
constexpr std::array<std::string_view, 10> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
// Token texts that always end generation (llama.cpp's special_eog_ids rule).
constexpr std::array<std::string_view, 11> kEndOfGenerationTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",         "<end_of_turn>",     "<|endoftext|>", "</s>",
    "<|eom_id|>", "<EOT>",      "_<EOT>",          "<|end_of_text|>",   "<end_of_utterance>"};
// FIM pad / repo / file-separator tokens also end generation; llama.cpp takes the first text of each
// group that the vocab has.
const std::array<std::vector<std::string_view>, 3> kFimEndGroups = {{
    {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"},
    {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
    {"<|file_sep|>"},
}};

// Pre-tokenizers for which llama.cpp adds BOS by default (the Llama-3 family).
constexpr std::array<std::string_view, 4> kAddBosPre = {"llama3", "llama-v3", "llama-bpe", "falcon3"};

std::string key(std::string_view name) { return std::string(kPrefix) + std::string(name); }

// text -> id; a text stored twice maps to the later id, as in llama.cpp.
std::unordered_map<std::string_view, int32_t> index_texts(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) ids[tokens[i]] = static_cast<int32_t>(i);
  return ids;
}

std::optional<int32_t> find_text(const std::unordered_map<std::string_view, int32_t>& ids,
                                 std::string_view text) {
  auto it = ids.find(text);
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

// The tokens that mark end of generation by their text (EOG texts and the FIM groups' first match).
std::vector<int32_t> end_of_generation_by_text(const std::vector<std::string>& tokens) {
  auto ids = index_texts(tokens);
  std::vector<int32_t> found;
  for (auto text : kEndOfGenerationTexts)
    if (auto id = find_text(ids, text)) found.push_back(*id);
  for (const auto& group : kFimEndGroups)
    for (auto text : group)
      if (auto id = find_text(ids, text)) {
        found.push_back(*id);
        break;
      }
  return found;
}

// Reads an optional special-token id: absent -> nullopt, 0xFFFFFFFF or -1 -> -1 (none), otherwise
// it must name a token.
std::optional<int32_t> read_token_id(const GgufFile& file, std::string_view name, int32_t n_vocab) {
  auto value = file.get_int_opt(key(name));
  if (!value) return std::nullopt;
  if (*value == -1 || *value == 0xFFFFFFFFLL) return -1;
  MKV_CHECK(*value >= 0 && *value < n_vocab, "{}: key '{}' = {} is not a token id (vocab has {} tokens)",
            file.path(), key(name), *value, n_vocab);
  return static_cast<int32_t>(*value);
}

void read_token_types(const GgufFile& file, Vocab& vocab) {
  const std::string types_key = key("token_type");
  if (!file.has(types_key)) {  // llama.cpp: every token NORMAL
    vocab.types.assign(vocab.tokens.size(), TokenType::NORMAL);
    return;
  }
  auto raw = file.get_int_array(types_key);
  MKV_CHECK(raw.size() == vocab.tokens.size(), "{}: key '{}' has {} entries but the vocab has {} tokens",
            file.path(), types_key, raw.size(), vocab.tokens.size());
  vocab.types.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    MKV_CHECK(raw[i] >= 0 && raw[i] <= static_cast<int64_t>(TokenType::BYTE),
              "{}: key '{}' entry {} (token '{}') has invalid type {}", file.path(), types_key, i,
              vocab.tokens[i], raw[i]);
    vocab.types[i] = static_cast<TokenType>(raw[i]);
  }
}

void read_scores(const GgufFile& file, Vocab& vocab) {
  const std::string scores_key = key("scores");
  if (file.has(scores_key)) {
    auto raw = file.get_float_array(scores_key);
    MKV_CHECK(raw.size() == vocab.tokens.size(), "{}: key '{}' has {} entries but the vocab has {} tokens",
              file.path(), scores_key, raw.size(), vocab.tokens.size());
    vocab.scores.assign(raw.begin(), raw.end());
  } else if (vocab.model == "llama") {  // llama.cpp: score 0 for every token
    vocab.scores.assign(vocab.tokens.size(), 0.0f);
  }
}

void read_merges(const GgufFile& file, Vocab& vocab) {
  const std::string merges_key = key("merges");
  if (!file.has(merges_key)) {
    MKV_CHECK(vocab.model != "gpt2", "{}: BPE vocab has no key '{}'", file.path(), merges_key);
    return;
  }
  vocab.merges = file.get_string_array(merges_key);
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const auto& merge = vocab.merges[i];
    MKV_CHECK(merge.size() >= 3 && merge.find(' ', 1) != std::string::npos,
              "{}: key '{}' entry {} ('{}') is not two tokens separated by a space", file.path(),
              merges_key, i, merge);
  }
}

void read_special_ids(const GgufFile& file, Vocab& vocab) {
  const int32_t n = vocab.size();
  if (vocab.model == "llama" && n > 2) {  // llama.cpp's SentencePiece defaults
    vocab.unk = 0;
    vocab.bos = 1;
    vocab.eos = 2;
  }
  const std::pair<std::string_view, int32_t*> keys[] = {
      {"bos_token_id", &vocab.bos},     {"eos_token_id", &vocab.eos},
      {"eot_token_id", &vocab.eot},     {"unknown_token_id", &vocab.unk},
      {"padding_token_id", &vocab.pad},
  };
  for (auto [name, id] : keys)
    if (auto value = read_token_id(file, name, n)) *id = *value;
}

void read_flags(const GgufFile& file, Vocab& vocab) {
  const bool spm = vocab.model == "llama";
  const bool llama3_pre = std::find(kAddBosPre.begin(), kAddBosPre.end(), vocab.pre) != kAddBosPre.end();
  vocab.add_bos = file.get_bool_opt(key("add_bos_token")).value_or(spm || llama3_pre);
  vocab.add_eos = file.get_bool_opt(key("add_eos_token")).value_or(false);
  vocab.add_space_prefix = file.get_bool_opt(key("add_space_prefix")).value_or(spm);
}

}  // namespace

Vocab Vocab::from_gguf(const GgufFile& file) {
  Vocab vocab;
  vocab.model = file.get_string(key("model"));
  MKV_CHECK(vocab.model == "llama" || vocab.model == "gpt2",
            "{}: key '{}' = '{}' is not a supported tokenizer (expected 'llama' or 'gpt2')", file.path(),
            key("model"), vocab.model);
  vocab.pre = file.get_string_opt(key("pre")).value_or("default");
  vocab.tokens = file.get_string_array(key("tokens"));
  MKV_CHECK(!vocab.tokens.empty(), "{}: key '{}' is empty", file.path(), key("tokens"));
  MKV_CHECK(vocab.tokens.size() < static_cast<size_t>(INT32_MAX), "{}: key '{}' has too many tokens",
            file.path(), key("tokens"));
  read_scores(file, vocab);
  read_token_types(file, vocab);
  read_merges(file, vocab);
  read_special_ids(file, vocab);
  read_flags(file, vocab);
  vocab.chat_template = file.get_string_opt("tokenizer.chat_template").value_or("");
  vocab.detect_special_tokens();
  return vocab;
}

void Vocab::detect_special_tokens() {
  if (specials_detected) return;
  specials_detected = true;
  MKV_ASSERT(types.size() == tokens.size());
  auto ids = index_texts(tokens);
  if (eot < 0) {
    for (auto text : kEotTexts)
      if (auto id = find_text(ids, text)) {
        eot = *id;
        break;
      }
  }
  std::vector<int32_t> control = end_of_generation_by_text(tokens);
  if (eot >= 0) control.push_back(eot);
  for (int32_t id : control) types[id] = TokenType::CONTROL;
}

std::vector<int32_t> Vocab::end_of_generation_ids() const {
  std::vector<int32_t> ids = end_of_generation_by_text(tokens);
  if (eos >= 0) ids.push_back(eos);
  if (eot >= 0) ids.push_back(eot);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace mkv
