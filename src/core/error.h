// Errors and checks shared by every layer.
//
// User input (files, flags, JSON rows, HTTP bodies) is validated at the boundary and reported with
// MkvError: the message names what was wrong and where (file, key, tensor, flag). Internal
// invariants use MKV_ASSERT, which also throws (never aborts) so a CLI can print one line and exit 1.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "core/message_text.h"

namespace mkv {

// The one exception type for bad input and failed invariants. what() is a complete sentence
// fragment ready to print after "error: ", always on one line: control bytes (a NUL or newline
// from a file or GGUF string), DEL and invalid UTF-8 in the message are shown as \xNN, so that
// what() is never cut at a NUL and the CLI prints exactly one line.
class MkvError : public std::runtime_error {
 public:
  explicit MkvError(const std::string& message)
      : std::runtime_error(is_message_safe(message) ? message : escape_for_message(message)) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw MkvError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace mkv

// Checks a condition on user input; on failure throws MkvError with the formatted message.
#define MKV_CHECK(cond, ...)         \
  do {                               \
    if (!(cond)) ::mkv::fail(__VA_ARGS__); \
  } while (0)

// Checks an internal invariant (a bug if it fails); names the source location.
#define MKV_ASSERT(cond)                                                                  \
  do {                                                                                    \
    if (!(cond))                                                                          \
      ::mkv::fail("internal error: {} failed at {}:{}", #cond, __FILE__, __LINE__);       \
  } while (0)
