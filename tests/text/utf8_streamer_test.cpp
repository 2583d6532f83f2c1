#include <gtest/gtest.h>

#include "text/tokenizer.h"

namespace mkv {
namespace {

// Pushes `bytes` one byte at a time; returns what each push emitted, then the flush.
std::vector<std::string> push_bytewise(std::string_view bytes) {
  Utf8Streamer streamer;
  std::vector<std::string> emitted;
  for (char byte : bytes) emitted.push_back(streamer.push(std::string_view(&byte, 1)));
  emitted.push_back(streamer.flush());
  return emitted;
}

TEST(Utf8Streamer, PassesAsciiThrough) {
  Utf8Streamer streamer;
  EXPECT_EQ(streamer.push("Hello"), "Hello");
  EXPECT_EQ(streamer.push(", world"), ", world");
  EXPECT_EQ(streamer.flush(), "");
}

TEST(Utf8Streamer, HoldsBackIncompleteCharacters) {
  // "é" (2 bytes), "☃" (3), "😀" (4): nothing is emitted until the last byte of each arrives.
  EXPECT_EQ(push_bytewise("\xC3\xA9"), (std::vector<std::string>{"", "\xC3\xA9", ""}));
  EXPECT_EQ(push_bytewise("\xE2\x98\x83"), (std::vector<std::string>{"", "", "\xE2\x98\x83", ""}));
  EXPECT_EQ(push_bytewise("\xF0\x9F\x98\x80"),
            (std::vector<std::string>{"", "", "", "\xF0\x9F\x98\x80", ""}));
}

TEST(Utf8Streamer, SplitsPiecesAtCharacterBoundaries) {
  Utf8Streamer streamer;
  EXPECT_EQ(streamer.push("ab\xE4\xBD"), "ab");
  EXPECT_EQ(streamer.push("\xA0\xE5"), "\xE4\xBD\xA0");
  EXPECT_EQ(streamer.push("\xA5\xBD!"), "\xE5\xA5\xBD!");
  EXPECT_EQ(streamer.flush(), "");
}

TEST(Utf8Streamer, PassesInvalidBytesThroughOnceTheyCannotBecomeValid) {
  Utf8Streamer streamer;
  EXPECT_EQ(streamer.push("\x80"), "\x80");           // stray continuation byte
  EXPECT_EQ(streamer.push("\xFF" "a"), "\xFF" "a");   // never valid in UTF-8
  EXPECT_EQ(streamer.push("\xC0\xAF"), "\xC0\xAF");   // overlong lead
  EXPECT_EQ(streamer.push("\xE0\x80"), "\xE0\x80");   // overlong 3-byte form
  EXPECT_EQ(streamer.push("\xED\xA0"), "\xED\xA0");   // surrogate
  EXPECT_EQ(streamer.push("\xF4\x90"), "\xF4\x90");   // above U+10FFFF
  EXPECT_EQ(streamer.push("\xE2\x98"), "");           // still possible
  EXPECT_EQ(streamer.push("x"), "\xE2\x98x");         // broken by an ASCII byte
  EXPECT_EQ(streamer.push("\xC3"), "");
  EXPECT_EQ(streamer.push("\xC3\xA9"), "\xC3\xC3\xA9");  // a new lead ends the old sequence
  EXPECT_EQ(streamer.flush(), "");
}

TEST(Utf8Streamer, FlushReturnsWhatIsLeft) {
  Utf8Streamer streamer;
  EXPECT_EQ(streamer.push("a\xF0\x9F"), "a");
  EXPECT_EQ(streamer.flush(), "\xF0\x9F");
  EXPECT_EQ(streamer.flush(), "");
  EXPECT_EQ(streamer.push("b"), "b");
}

TEST(Utf8Streamer, ReassemblesAnyByteSplit) {
  const std::string text = "na\xC3\xAFve \xE2\x98\x83 \xF0\x9F\x98\x80 end";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Utf8Streamer streamer;
    std::string out = streamer.push(std::string_view(text).substr(0, cut));
    out += streamer.push(std::string_view(text).substr(cut));
    out += streamer.flush();
    EXPECT_EQ(out, text) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace mkv
