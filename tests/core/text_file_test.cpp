// core/text_file.h and the one-line guarantee of MkvError (core/error.h, core/message_text.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/message_text.h"
#include "core/text_file.h"
#include "core/threading.h"
#include "support/test_support.h"

namespace mkv {
namespace {
namespace fs = std::filesystem;

using test::error_of;

TEST(TextFile, ReadsRegularFilesWhole) {
  const fs::path dir = test::temp_dir();
  const std::string text("line 1\nline 2\r\n\xff\x00 binary", 23);
  std::ofstream(dir / "a.txt", std::ios::binary) << text;
  EXPECT_EQ(read_text_file(dir / "a.txt"), text);
  std::ofstream(dir / "empty.txt", std::ios::binary);
  EXPECT_EQ(read_text_file(dir / "empty.txt"), "");
}

TEST(TextFile, RefusesDirectoriesMissingFilesAndOversizedInput) {
  const fs::path dir = test::temp_dir();
  std::string e = error_of([&] { read_text_file(dir, "-f"); });
  EXPECT_NE(e.find("-f '" + dir.string() + "' is a directory"), std::string::npos) << e;
  e = error_of([&] { read_text_file(dir / "missing.txt", "--data"); });
  EXPECT_NE(e.find("--data '" + (dir / "missing.txt").string() + "' does not exist"), std::string::npos) << e;
  std::ofstream(dir / "big.txt") << std::string(1000, 'x');
  e = error_of([&] { read_text_file(dir / "big.txt", "", {.max_file_bytes = 999}); });
  EXPECT_NE(e.find("is 1000 bytes, more than the 999 bytes limit"), std::string::npos) << e;
  EXPECT_EQ(read_text_file(dir / "big.txt", "", {.max_file_bytes = 1000}).size(), 1000u);
  e = error_of([&] { read_text_file("", "--essay"); });
  EXPECT_NE(e.find("--essay"), std::string::npos) << e;
}

TEST(TextFile, EndlessDevicesStopAtTheStreamCap) {
  if (!fs::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  const std::string e = error_of([&] { read_text_file("/dev/zero", "-f", {.max_stream_bytes = 1 << 20}); });
  EXPECT_NE(e.find("'/dev/zero' is not a regular file and streams more than 1 MiB"), std::string::npos) << e;
  EXPECT_EQ(read_text_file("/dev/null"), "");
}

TEST(TextFile, WritesReplaceTheFileWholeAndLeaveNoTemporaryBehind) {
  const fs::path dir = test::temp_dir();
  write_text_file(dir / "out.json", "old\n");
  write_text_file(dir / "out.json", "new\n");
  EXPECT_EQ(read_text_file(dir / "out.json"), "new\n");
  append_text_file(dir / "out.json", "more\n");
  append_text_file(dir / "added.jsonl", "first\n");
  EXPECT_EQ(read_text_file(dir / "out.json"), "new\nmore\n");
  EXPECT_EQ(read_text_file(dir / "added.jsonl"), "first\n");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 2);
  // A symlink is written through: it stays a link, its target gets the text.
  fs::create_symlink(dir / "added.jsonl", dir / "link");
  write_text_file(dir / "link", "through\n");
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_text_file(dir / "added.jsonl"), "through\n");
}

TEST(TextFile, WriteFailuresAreErrorsNamingThePath) {
  const fs::path dir = test::temp_dir();
  std::string e = error_of([&] { write_text_file(dir / "no" / "such" / "folder.json", "x", "-o"); });
  EXPECT_NE(e.find("-o '" + (dir / "no" / "such" / "folder.json").string() + "'"), std::string::npos) << e;
  e = error_of([&] { write_text_file(dir, "x"); });
  EXPECT_NE(e.find(dir.string()), std::string::npos) << e;
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  // What a full disk does to a write: an error, not an empty file and success.
  e = error_of([&] { write_text_file("/dev/full", "result\n"); });
  EXPECT_NE(e.find("cannot write '/dev/full': No space left on device"), std::string::npos) << e;
  e = error_of([&] { append_text_file("/dev/full", "row\n"); });
  EXPECT_NE(e.find("No space left on device"), std::string::npos) << e;
}

TEST(TextFile, SplitsLinesWithNumbers) {
  const auto lines = split_lines("a\r\n\nb");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].number, 1);
  EXPECT_EQ(lines[0].text, "a");
  EXPECT_TRUE(is_blank(lines[1].text));
  EXPECT_EQ(lines[2].number, 3);
  EXPECT_EQ(lines[2].text, "b");
  EXPECT_TRUE(split_lines("").empty());
}

TEST(TextFile, JsonErrorTextDropsTheExceptionTag) {
  EXPECT_EQ(json_error_text("[json.exception.parse_error.101] parse error at line 1"), "parse error at line 1");
  EXPECT_EQ(json_error_text("plain"), "plain");
}

TEST(MessageText, EscapesControlBytesAndInvalidUtf8) {
  EXPECT_EQ(escape_for_message(std::string("lla\0ma", 6)), "lla\\x00ma");
  EXPECT_EQ(escape_for_message("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(escape_for_message("caf\xc3\xa9 \xe2\x80\x94 ok"), "caf\xc3\xa9 \xe2\x80\x94 ok");
  EXPECT_EQ(escape_for_message("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(escape_for_message("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(escape_for_message("abcdef", 3), "abc...");
}

TEST(MessageText, MkvErrorIsAlwaysOneLineAndNeverCutAtNul) {
  const MkvError e(std::string("key 'a\0b'\nsecond line", 21));
  EXPECT_STREQ(e.what(), "key 'a\\x00b'\\x0asecond line");
  EXPECT_STREQ(MkvError("plain message").what(), "plain message");
}

TEST(Threading, ThreadCountsAboveTheCapAreRejected) {
  EXPECT_GE(max_thread_count(), 64);
  EXPECT_GE(max_thread_count(), 4 * hardware_thread_count());
  const std::string e = error_of([] { set_num_threads(max_thread_count() + 1); });
  EXPECT_NE(e.find("above the limit"), std::string::npos) << e;
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(0);
}

}  // namespace
}  // namespace mkv
