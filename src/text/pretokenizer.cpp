#include "text/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace mkv {
namespace {

// llama.cpp's rewrites of the tokenizer.json regexes: `(?i:'s|...)` spelled out as '[sS]|... so
// that case folding cannot reach non-ASCII letters.
constexpr const char* kContractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const std::string kLlama3Regex =
    std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2Regex =
    std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

class PreTokenizer::Regex {
 public:
  explicit Regex(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    MKV_ASSERT(code_ != nullptr);
    // JIT is an optimisation: pcre2_match falls back to the interpreter when it is unavailable.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the matches of this regex in `text`, and the unmatched stretches between them, to
  // `out`.
  void split(std::string_view text, std::vector<std::string_view>& out) const {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(code_, nullptr), &pcre2_match_data_free);
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t unmatched_from = 0;  // start of the text not yet emitted
    std::size_t search_from = 0;
    int rc;
    while (search_from < text.size() &&
           (rc = pcre2_match(code_, subject, text.size(), search_from, PCRE2_NO_UTF_CHECK,
                             match.get(), nullptr)) > 0) {
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
      if (span[1] == span[0]) {  // empty match: step over one character
        search_from = span[0] + 1;
        while (search_from < text.size() && (uint8_t(text[search_from]) & 0xC0) == 0x80)
          ++search_from;
        continue;
      }
      if (span[0] > unmatched_from)
        out.push_back(text.substr(unmatched_from, span[0] - unmatched_from));
      out.push_back(text.substr(span[0], span[1] - span[0]));
      unmatched_from = search_from = span[1];
    }
    if (search_from < text.size() && rc != PCRE2_ERROR_NOMATCH)
      fail("pre-tokenizer regex failed on a {}-byte text: {}", text.size(), pcre2_message(rc));
    if (unmatched_from < text.size()) out.push_back(text.substr(unmatched_from));
  }

 private:
  pcre2_code* code_ = nullptr;
};

PreTokenizer::PreTokenizer(std::string_view pre) : name_(pre) {
  std::vector<std::string> patterns;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    patterns = {kLlama3Regex};
    ignore_merges_ = true;
  } else if (pre == "qwen2") {
    patterns = {kQwen2Regex};
    clean_spaces_ = false;
  } else if (pre == "gpt-2") {
    patterns = {kGpt2Regex};
  } else if (pre == "default" || pre.empty()) {
    patterns = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Regex, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  } else {
    fail(
        "unsupported BPE pre-tokenizer '{}' (tokenizer.ggml.pre); supported: llama-bpe, llama3, "
        "llama-v3, qwen2, gpt-2, default",
        pre);
  }
  for (const auto& pattern : patterns) regexes_.push_back(std::make_shared<const Regex>(pattern));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  if (regexes_.size() == 1) {
    regexes_[0]->split(text, out);
    return;
  }
  std::vector<std::string_view> pieces{text}, next;
  for (const auto& regex : regexes_) {
    next.clear();
    for (auto piece : pieces) regex->split(piece, next);
    pieces.swap(next);
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace mkv
