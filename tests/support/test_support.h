// Helpers shared by all test executables.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace mkv::test {

// The shared assets folder: $MOMENTKV_ASSETS, else <source>/../shared/assets; nullopt if absent.
std::optional<std::filesystem::path> shared_assets();

// A fresh, empty temporary directory unique to the calling test.
std::filesystem::path temp_dir();

// Reads a whole file (throws on failure).
std::string read_file(const std::filesystem::path& path);

// The message of the MkvError `action` throws; a test failure (and "") when it throws none.
std::string error_of(const std::function<void()>& action);

struct ShellRun {
  int exit_code = -1;  // -1 when the command did not exit normally
  std::string out;     // stdout
  std::string err;     // stderr
};
// Runs `command` with /bin/sh; stdout and stderr captured.
ShellRun run_shell(const std::string& command);
// Runs the momentkv binary of this build: `momentkv ARGS` (ARGS as typed in a shell).
ShellRun run_momentkv(const std::string& args);

}  // namespace mkv::test

// Resolves `relative` inside the shared assets into `var`, or skips the test with a message
// saying what is missing and how to provide it.
#define MKV_REQUIRE_ASSET(var, relative)                                                        \
  std::filesystem::path var;                                                                    \
  do {                                                                                          \
    auto mkv_assets_ = ::mkv::test::shared_assets();                                            \
    if (!mkv_assets_ || !std::filesystem::exists(*mkv_assets_ / (relative)))                    \
      GTEST_SKIP() << "shared asset '" << (relative)                                            \
                   << "' not found (set MOMENTKV_ASSETS or place ../shared/assets)";            \
    var = *mkv_assets_ / (relative);                                                            \
  } while (0)
