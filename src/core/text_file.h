// Reading user-supplied text files (prompts, essays, JSON/JSONL data, result rows) safely, and
// writing result files so that a failure is an error, never a silently empty file.
//
// Every place that reads a file named on the command line goes through read_text_file(): a
// directory is an error (not an empty prompt), a regular file larger than the cap is refused
// before anything is read, and a non-regular file (a pipe, /dev/stdin, /dev/zero) is read only up
// to its smaller cap, so an endless device fails fast instead of filling memory. Every error
// names the path (and what it was for, e.g. "-f", "--data").
#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mkv {

// Regular files: a prompt, an essay, a RULER/LongBench jsonl (RULER 128k × 500 samples is ~300 MB).
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{1} << 30;  // 1 GiB
// Pipes and devices are read into memory as they stream; larger inputs should be saved to a file.
inline constexpr std::uint64_t kMaxStreamBytes = std::uint64_t{64} << 20;  // 64 MiB

struct TextFileLimits {
  std::uint64_t max_file_bytes = kMaxTextFileBytes;
  std::uint64_t max_stream_bytes = kMaxStreamBytes;
};

// The whole content of `path`. `what` names its role in messages ("-f", "--data", "prompt file");
// it may be empty. MkvError ("<what> '<path>': <problem>") when the path does not exist, is a
// directory, cannot be opened or read, or exceeds the limits.
std::string read_text_file(const std::filesystem::path& path, std::string_view what = {},
                           TextFileLimits limits = {});

// Writes `text` as the whole content of `path`: into a temporary file beside it, every write and the
// close checked (a full disk is an error here, not an empty file), then renamed over `path`, so that
// a reader sees the old content or the new, never a part, and a failed write leaves the old file.
// `what` as for read_text_file. MkvError naming the path and the system's reason.
void write_text_file(const std::filesystem::path& path, std::string_view text, std::string_view what = {});
// Appends `text` to `path` (created when missing), every write and the close checked. A failure
// part-way can leave a partial last line, which the JSONL readers of this project skip.
void append_text_file(const std::filesystem::path& path, std::string_view text, std::string_view what = {});

// One line of a text with its 1-based number; the text excludes the '\n' (and a trailing '\r').
struct TextLine {
  int number = 0;
  std::string_view text;
};
// Splits `text` into lines (a missing final newline still ends the last line). The views point
// into `text`.
std::vector<TextLine> split_lines(std::string_view text);
// Not of a temporary string: its lines would point into freed memory (a range-for over
// split_lines(read_text_file(p)) destroys the text before the loop body runs).
template <class Text>
  requires std::same_as<Text, std::string>
std::vector<TextLine> split_lines(Text&& text) = delete;

// True when a line holds only spaces, tabs and '\r'.
bool is_blank(std::string_view line);

// nlohmann::json's what() without its "[json.exception.parse_error.101] " prefix, so that a
// message reads "FILE:LINE: not valid JSON (parse error at line 1, column 3: ...)".
std::string json_error_text(std::string_view what);

}  // namespace mkv
