// What a results table says about how it was made: the command line, the commit the binary was
// configured at, the date (UTC) and the CPU model.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <string>

#include "commands.h"

#ifndef MOMENTKV_GIT_COMMIT
#define MOMENTKV_GIT_COMMIT "unknown"
#endif

namespace mkv::cli {
namespace {

std::string& command_line() {
  static std::string line;
  return line;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

}  // namespace

void set_command_line(int argc, char** argv) {
  std::string line = "momentkv";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    line += arg.find_first_of(" \t'\"") == std::string::npos ? " " + arg : " '" + arg + "'";
  }
  command_line() = line;
}

std::string build_commit() { return MOMENTKV_GIT_COMMIT; }

std::string provenance_line() {
  return fmt::format("command: {} · commit {} · {:%Y-%m-%d %H:%M} UTC · CPU {}", command_line(), MOMENTKV_GIT_COMMIT,
                     fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())), cpu_model());
}

}  // namespace mkv::cli
