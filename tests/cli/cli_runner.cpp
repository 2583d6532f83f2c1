#include "cli/cli_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>

#include "support/test_support.h"

namespace mkv::test {

CliResult run_momentkv(const std::string& args) {
  // A file of its own (not temp_dir(), which would wipe the calling test's folder).
  static int calls = 0;
  const auto err_path = std::filesystem::temp_directory_path() /
                        ("momentkv-cli-" + std::to_string(::getpid()) + "-" + std::to_string(++calls) + ".stderr");
  const std::string command = std::string(MOMENTKV_BIN) + " " + args + " 2>" + err_path.string();
  CliResult r;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_path);
  std::filesystem::remove(err_path);
  return r;
}

void expect_one_line_error(const CliResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace mkv::test
