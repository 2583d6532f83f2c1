// The CLI tests' check of momentkv's error convention (run_momentkv itself is in test_support.h).
#pragma once

#include <string>

#include "support/test_support.h"

namespace mkv::test {

using CliResult = ShellRun;

// A failing command prints exactly one line starting with "error:" that contains `fragment`,
// and exits non-zero.
void expect_one_line_error(const CliResult& r, const std::string& fragment);

}  // namespace mkv::test
