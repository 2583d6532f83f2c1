#include "eval/metrics/python_text.h"

#include <cstdio>
#include <cstdlib>

namespace mkv::eval::py {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool in(char32_t c, char32_t first, char32_t last) { return c >= first && c <= last; }

// Case pairs laid out as (upper, lower) alternating from `first` (an upper-case letter) to `last`.
bool lower_alternating(char32_t c, char32_t first, char32_t last, char32_t* out) {
  if (!in(c, first, last) || ((c - first) % 2) != 0) return false;
  *out = c + 1;
  return true;
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int extra = lead < 0x80          ? 0
                      : (lead >> 5) == 0x6 ? 1
                      : (lead >> 4) == 0xE ? 2
                      : (lead >> 3) == 0x1E ? 3
                                            : -1;
    bool valid = extra >= 0 && i + extra < text.size();
    char32_t c = valid ? (extra == 0 ? lead : lead & (0x3F >> extra)) : 0;
    for (int k = 1; valid && k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      valid = (b & 0xC0) == 0x80;
      c = (c << 6) | (b & 0x3F);
    }
    out.push_back(valid ? c : kReplacement);
    i += valid ? extra + 1 : 1;
  }
  return out;
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

char32_t lower(char32_t c) {
  if (c < 0x80) return in(c, 'A', 'Z') ? c + 32 : c;
  if (in(c, 0xC0, 0xDE) && c != 0xD7) return c + 32;  // Latin-1
  char32_t out = c;
  if (lower_alternating(c, 0x100, 0x12F, &out) || lower_alternating(c, 0x132, 0x137, &out) ||
      lower_alternating(c, 0x14A, 0x177, &out) || lower_alternating(c, 0x139, 0x148, &out) ||
      lower_alternating(c, 0x179, 0x17E, &out))
    return out;  // Latin Extended-A
  if (c == 0x178) return 0xFF;
  if (in(c, 0x391, 0x3A9) && c != 0x3A2) return c + 32;  // Greek
  if (c == 0x386) return 0x3AC;
  if (in(c, 0x388, 0x38A)) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (in(c, 0x38E, 0x38F)) return c + 63;
  if (in(c, 0x410, 0x42F)) return c + 32;  // Cyrillic
  if (in(c, 0x400, 0x40F)) return c + 80;
  if (c == 0x4C0) return 0x4CF;
  if (lower_alternating(c, 0x460, 0x481, &out) || lower_alternating(c, 0x48A, 0x4BF, &out) ||
      lower_alternating(c, 0x4C1, 0x4CE, &out) || lower_alternating(c, 0x4D0, 0x52F, &out))
    return out;
  return c;
}

std::string lower(std::string_view text) {
  std::u32string chars = decode_utf8(text);
  for (char32_t& c : chars) c = lower(c);
  return encode_utf8(chars);
}

bool is_space(char32_t c) {
  return in(c, 0x09, 0x0D) || in(c, 0x1C, 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return in(c, 'a', 'z') || in(c, 'A', 'Z') || in(c, '0', '9') || c == '_';
  if (c <= 0xFF) {
    return c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA ||
           in(c, 0xBC, 0xBE) || (c >= 0xC0 && c != 0xD7 && c != 0xF7);
  }
  const bool punctuation_or_symbol =
      in(c, 0x2000, 0x206F) || in(c, 0x2190, 0x245F) || in(c, 0x2500, 0x2775) ||
      in(c, 0x2794, 0x27FF) || in(c, 0x2900, 0x2BFF) || in(c, 0x3000, 0x3004) ||
      in(c, 0x3008, 0x3020) || c == 0x3030 || in(c, 0x3036, 0x3037) || in(c, 0x303D, 0x303F) ||
      in(c, 0xFF01, 0xFF0F) || in(c, 0xFF1A, 0xFF20) || in(c, 0xFF3B, 0xFF40) ||
      in(c, 0xFF5B, 0xFF65) || in(c, 0x1F300, 0x1FAFF);
  return !punctuation_or_symbol && !is_space(c);
}

bool is_decimal_digit(char32_t c) {
  return in(c, '0', '9') || in(c, 0x660, 0x669) || in(c, 0x6F0, 0x6F9) || in(c, 0x966, 0x96F) ||
         in(c, 0xFF10, 0xFF19);
}

std::vector<std::string> split_whitespace(std::string_view text) {
  std::vector<std::string> fields;
  std::u32string current;
  for (char32_t c : decode_utf8(text)) {
    if (is_space(c)) {
      if (!current.empty()) fields.push_back(encode_utf8(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) fields.push_back(encode_utf8(current));
  return fields;
}

std::string strip(std::string_view text) {
  const std::u32string chars = decode_utf8(text);
  size_t begin = 0, end = chars.size();
  while (begin < end && is_space(chars[begin])) ++begin;
  while (end > begin && is_space(chars[end - 1])) --end;
  return encode_utf8(std::u32string_view(chars).substr(begin, end - begin));
}

std::vector<std::string> find_digit_runs(std::string_view text) {
  std::vector<std::string> runs;
  std::u32string current;
  for (char32_t c : decode_utf8(text)) {
    if (is_decimal_digit(c)) {
      current.push_back(c);
    } else if (!current.empty()) {
      runs.push_back(encode_utf8(current));
      current.clear();
    }
  }
  if (!current.empty()) runs.push_back(encode_utf8(current));
  return runs;
}

std::string_view first_line(std::string_view text) {
  const size_t start = text.find_first_not_of('\n');
  if (start == std::string_view::npos) return {};
  text.remove_prefix(start);
  return text.substr(0, text.find('\n'));
}

double round2(double x) {
  // glibc's printf rounds the exact binary value correctly, as Python's round() does.
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.2f", x);
  return std::strtod(buffer, nullptr);
}

}  // namespace mkv::eval::py
