// Making untrusted text (GGUF strings, file contents, paths) safe to embed in a one-line message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mkv {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when the bytes there are not
// one (a stray continuation byte, an overlong form, a surrogate, a truncated sequence).
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b == 0xE0) n = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) n = 3;
  else if (b == 0xED) n = 3, hi = 0x9F;
  else if (b >= 0xEE && b <= 0xEF) n = 3;
  else if (b == 0xF0) n = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) n = 4;
  else if (b == 0xF4) n = 4, hi = 0x8F;
  else return 0;
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

// `text` as it may appear inside a one-line message: control bytes (NUL, newline, tab, ...), DEL
// and bytes that are not valid UTF-8 become \xNN; valid UTF-8 is kept. A text longer than
// `max_bytes` is cut there (at a character boundary) and ends with "...".
inline std::string escape_for_message(std::string_view text, std::size_t max_bytes = std::string_view::npos) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() < 256 ? text.size() : 256);
  std::size_t i = 0;
  while (i < text.size()) {
    if (i >= max_bytes) {
      out += "...";
      break;
    }
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0 || b < 0x20 || b == 0x7f) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

// True when escape_for_message would return `text` unchanged (no cut): the common case, checked
// first so that ordinary messages are not copied.
inline bool is_message_safe(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0 || b < 0x20 || b == 0x7f) return false;
    i += n;
  }
  return true;
}

}  // namespace mkv
