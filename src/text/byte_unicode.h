// GPT-2's reversible byte <-> Unicode mapping used by byte-level BPE vocabularies, and the strict
// UTF-8 helpers it needs.
//
// Every byte maps to one printable code point: bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF map to
// themselves, the other 68 bytes (controls, space, 0x7F-0xA0, 0xAD) to U+0100 upward in byte order
// (so ' ' becomes 'Ġ' U+0120 and '\n' becomes 'Ċ' U+010A). Token texts in a "gpt2" GGUF vocabulary
// are stored in this mapped form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mkv {

// Decodes the strictly valid UTF-8 sequence at `offset` (no overlong forms, surrogates or code
// points above U+10FFFF) and advances past it; on invalid input returns nullopt and advances by one
// byte.
std::optional<char32_t> decode_utf8(std::string_view text, std::size_t& offset);
void append_utf8(char32_t code_point, std::string& out);

// `text` itself when it is valid UTF-8; otherwise a copy in `repaired` where every byte that is not
// part of a valid sequence became U+FFFD (what llama.cpp does for each byte it cannot decode).
std::string_view repair_utf8(std::string_view text, std::string& repaired);

// The UTF-8 encoding of the code point that stands for `byte`.
std::string_view byte_to_unicode(uint8_t byte);

// Maps every byte of `bytes` (any bytes, not necessarily UTF-8) to its code point, in UTF-8.
std::string bytes_to_unicode(std::string_view bytes);

// The byte a mapped code point stands for, or nullopt for code points outside the mapping.
std::optional<uint8_t> unicode_to_byte(char32_t code_point);

// Inverse of bytes_to_unicode for a token text. Returns nullopt when the text is not valid
// UTF-8 or contains a code point outside the mapping (added tokens stored as raw text).
std::optional<std::string> unicode_to_bytes(std::string_view mapped);

}  // namespace mkv
