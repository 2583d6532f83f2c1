// Python string semantics the benchmark metrics rely on, over UTF-8 text.
//
// LongBench and RULER score with Python 3 `str` operations (code points, str.lower, str.split,
// re's \b and \d). These helpers reproduce them on UTF-8 input:
// - Invalid UTF-8 bytes decode to U+FFFD (Python would have refused the file earlier).
// - lower(): exact for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (the one-to-one
//   mappings of those blocks); other code points are left unchanged (Python also lowers e.g.
//   Armenian, Georgian and full-width Latin, and maps U+0130 to two code points).
// - is_space(): exactly Python's str.isspace().
// - is_word_char(): Python's Unicode \w for ASCII, Latin-1, the General Punctuation, arrows,
//   math, symbol, CJK-punctuation and full-width-punctuation blocks; any other non-ASCII code point
//   counts as a word character (true for letters and digits of every script).
// - is_decimal_digit(): ASCII, Arabic-Indic, extended Arabic-Indic, Devanagari and full-width
//   digits; Python's \d matches every Unicode Nd digit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mkv::eval::py {

std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view text);

char32_t lower(char32_t c);
std::string lower(std::string_view text);  // str.lower()

bool is_space(char32_t c);
bool is_word_char(char32_t c);
bool is_decimal_digit(char32_t c);

// str.split() with no argument: runs of whitespace separate, no empty fields.
std::vector<std::string> split_whitespace(std::string_view text);

// str.strip() with no argument.
std::string strip(std::string_view text);

// re.findall(r"\d+", text).
std::vector<std::string> find_digit_runs(std::string_view text);

// text.lstrip('\n').split('\n')[0]: LongBench's "first line only" rule.
std::string_view first_line(std::string_view text);

// Python's round(x, 2) (correctly rounded, ties to even on the exact binary value).
double round2(double x);

}  // namespace mkv::eval::py
