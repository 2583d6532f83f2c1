#include "text/byte_unicode.h"

#include <array>

namespace mkv {

std::optional<char32_t> decode_utf8(std::string_view text, std::size_t& offset) {
  const auto byte_at = [&](std::size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte_at(offset);
  int length;
  char32_t code_point;
  char32_t min_code_point;  // smallest value this length may encode (rejects overlong forms)
  if (lead < 0x80) {
    ++offset;
    return lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, min_code_point = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, min_code_point = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, min_code_point = 0x10000;
  } else {
    ++offset;
    return std::nullopt;
  }
  if (offset + length > text.size()) {
    ++offset;
    return std::nullopt;
  }
  for (int i = 1; i < length; ++i) {
    const uint8_t continuation = byte_at(offset + i);
    if ((continuation & 0xC0) != 0x80) {
      ++offset;
      return std::nullopt;
    }
    code_point = (code_point << 6) | (continuation & 0x3F);
  }
  if (code_point < min_code_point || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    ++offset;
    return std::nullopt;
  }
  offset += length;
  return code_point;
}

void append_utf8(char32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += char(code_point);
  } else if (code_point < 0x800) {
    out += char(0xC0 | (code_point >> 6));
    out += char(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += char(0xE0 | (code_point >> 12));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  } else {
    out += char(0xF0 | (code_point >> 18));
    out += char(0x80 | ((code_point >> 12) & 0x3F));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  }
}

std::string_view repair_utf8(std::string_view text, std::string& repaired) {
  std::size_t offset = 0;
  bool valid = true;
  while (valid && offset < text.size()) valid = decode_utf8(text, offset).has_value();
  if (valid) return text;
  repaired.clear();
  repaired.reserve(text.size() + 16);
  offset = 0;
  while (offset < text.size()) {
    const std::size_t start = offset;
    if (decode_utf8(text, offset)) {
      repaired.append(text.substr(start, offset - start));
    } else {
      append_utf8(0xFFFD, repaired);
    }
  }
  return repaired;
}

namespace {

struct ByteUnicodeTables {
  std::array<char32_t, 256> code_point_of_byte{};
  std::array<std::string, 256> utf8_of_byte;  // UTF-8 of code_point_of_byte[b]

  ByteUnicodeTables() {
    char32_t next_unprintable = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      code_point_of_byte[b] = printable ? char32_t(b) : next_unprintable++;
      append_utf8(code_point_of_byte[b], utf8_of_byte[b]);
    }
  }
};

const ByteUnicodeTables& tables() {
  static const ByteUnicodeTables instance;
  return instance;
}

}  // namespace

std::string_view byte_to_unicode(uint8_t byte) { return tables().utf8_of_byte[byte]; }

std::string bytes_to_unicode(std::string_view bytes) {
  std::string mapped;
  mapped.reserve(bytes.size() * 2);
  for (char c : bytes) mapped += byte_to_unicode(static_cast<uint8_t>(c));
  return mapped;
}

std::optional<uint8_t> unicode_to_byte(char32_t code_point) {
  // Printable bytes map to themselves; the 68 others occupy U+0100..U+0143.
  if (code_point < 0x100) {
    if (tables().code_point_of_byte[code_point] == code_point) return uint8_t(code_point);
    return std::nullopt;
  }
  static const std::array<uint8_t, 68> byte_of_shifted = [] {
    std::array<uint8_t, 68> result{};
    for (int b = 0; b < 256; ++b)
      if (char32_t cp = tables().code_point_of_byte[b]; cp >= 0x100)
        result[cp - 0x100] = uint8_t(b);
    return result;
  }();
  if (code_point < 0x100 + byte_of_shifted.size()) return byte_of_shifted[code_point - 0x100];
  return std::nullopt;
}

std::optional<std::string> unicode_to_bytes(std::string_view mapped) {
  std::string bytes;
  bytes.reserve(mapped.size());
  std::size_t offset = 0;
  while (offset < mapped.size()) {
    const auto code_point = decode_utf8(mapped, offset);
    if (!code_point) return std::nullopt;
    const auto byte = unicode_to_byte(*code_point);
    if (!byte) return std::nullopt;
    bytes += char(*byte);
  }
  return bytes;
}

}  // namespace mkv
