// The pre-tokenizer of byte-level BPE vocabularies: splits text into the pieces ("pre-tokens")
// that BPE merges never cross, with the regexes llama.cpp uses for each `tokenizer.ggml.pre`,
// compiled once with PCRE2 (UTF + Unicode properties + JIT).
//
// Supported names (llama.cpp's spellings):
//   llama-bpe, llama3, llama-v3  Llama-3: digits in groups of up to 3, ignore_merges
//   qwen2                        Qwen2/2.5/3: single digits, no space cleaning on decode
//   gpt-2                        the original GPT-2 regex
//   default (or empty)           llama.cpp's fallback: four regexes applied one after another
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mkv {

class PreTokenizer {
 public:
  // Throws MkvError naming `pre` and the supported names when it is unknown.
  explicit PreTokenizer(std::string_view pre);

  // Appends to `out` the pre-tokens of `text` (views into it, in order, covering it exactly).
  // `text` must be valid UTF-8 (see repair_utf8); throws MkvError if PCRE2 fails to match.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  const std::string& name() const { return name_; }
  // A pre-token that is itself a vocabulary token is emitted without merging (Llama-3).
  bool ignore_merges() const { return ignore_merges_; }
  // Detokenization removes spaces before punctuation and some contractions (llama.cpp's
  // clean_spaces, HF's clean_up_tokenization_spaces).
  bool clean_spaces() const { return clean_spaces_; }

 private:
  class Regex;
  std::string name_;
  std::vector<std::shared_ptr<const Regex>>
      regexes_;  // applied in order, each to the pieces of the last
  bool ignore_merges_ = false;
  bool clean_spaces_ = true;
};

}  // namespace mkv
