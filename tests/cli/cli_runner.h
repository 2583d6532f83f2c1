// Runs the momentkv binary for the CLI tests and checks its error convention.
#pragma once

#include <string>

namespace mkv::test {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `momentkv ARGS` (ARGS as typed in a shell); captures stdout and stderr.
CliResult run_momentkv(const std::string& args);

// A failing command prints exactly one line starting with "error:" that contains `fragment`,
// and exits non-zero.
void expect_one_line_error(const CliResult& r, const std::string& fragment);

}  // namespace mkv::test
