#include "cli/cli_runner.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mkv::test {

void expect_one_line_error(const CliResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace mkv::test
