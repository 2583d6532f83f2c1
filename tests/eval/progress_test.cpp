#include "core/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace mkv {
namespace {

TEST(Progress, PlainLinesWhenNotATerminal) {
  double now = 100;
  std::ostringstream out;
  {
    ProgressBar bar("eval", 10, 0, out, {false, [&] { return now; }, 10});
    now = 101, bar.advance();  // within the interval: no line
    now = 111, bar.advance();  // 2 done in 11 s: 0.18/s, 8 left → 44 s
    now = 120, bar.finish();
  }
  EXPECT_EQ(out.str(),
            "eval 0/10 (0%) 0.00/s elapsed 00:00 eta --:--\n"
            "eval 2/10 (20%) 0.18/s elapsed 00:11 eta 00:44\n"
            "eval 2/10 (20%) 0.10/s elapsed 00:20 eta 00:00\n");
}

TEST(Progress, PlainLogPrintsTheCompletedLineOnce) {
  double now = 0;
  std::ostringstream out;
  ProgressBar bar("eval", 2, 0, out, {false, [&] { return now; }, 10});
  now = 1, bar.advance();
  now = 2, bar.advance();  // completes: drawn at once
  now = 3, bar.finish();
  EXPECT_EQ(out.str(),
            "eval 0/2 (0%) 0.00/s elapsed 00:00 eta --:--\n"
            "eval 2/2 (100%) 1.00/s elapsed 00:02 eta 00:00\n");
}

TEST(Progress, RedrawsInPlaceOnATerminal) {
  double now = 0;
  std::ostringstream out;
  ProgressBar bar("run", 4, 0, out, {true, [&] { return now; }});
  now = 1, bar.advance(2);
  const std::string text = out.str();
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_NE(text.rfind("\rrun [############            ] 2/4 (50%) 2.00/s elapsed 00:01 eta 00:01"), std::string::npos);
  bar.finish();
  EXPECT_TRUE(out.str().ends_with("\n"));
}

TEST(Progress, ResumedRunCountsOnlyNewItems) {
  double now = 0;
  std::ostringstream out;
  ProgressBar bar("eval", 10, 5, out, {false, [&] { return now; }, 1});
  now = 2, bar.advance();  // 1 new item in 2 s: 0.5/s, 4 left → 8 s
  EXPECT_NE(out.str().find("6/10 (60%) 0.50/s elapsed 00:02 eta 00:08"), std::string::npos) << out.str();
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(3725), "1:02:05");
  EXPECT_EQ(format_duration(65), "01:05");
  EXPECT_EQ(format_duration(-1), "--:--");
}

}  // namespace
}  // namespace mkv
