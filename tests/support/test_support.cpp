#include "support/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace mkv::test {

std::optional<std::filesystem::path> shared_assets() {
  if (const char* env = std::getenv("MOMENTKV_ASSETS"); env && *env) {
    std::filesystem::path p(env);
    if (std::filesystem::is_directory(p)) return p;
    return std::nullopt;
  }
  std::filesystem::path p = std::filesystem::path(MOMENTKV_SOURCE_DIR) / ".." / "shared" / "assets";
  if (std::filesystem::is_directory(p)) return std::filesystem::weakly_canonical(p);
  return std::nullopt;
}

std::filesystem::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "mkv";
  for (auto& c : name)
    if (c == '/') c = '_';
  auto dir = std::filesystem::temp_directory_path() /
             ("momentkv-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const MkvError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected MkvError";
  return "";
}

ShellRun run_shell(const std::string& command) {
  // A file of its own (not temp_dir(), which would wipe the calling test's folder).
  static int calls = 0;
  const std::filesystem::path err_path =
      std::filesystem::temp_directory_path() /
      ("momentkv-test-" + std::to_string(::getpid()) + "-" + std::to_string(++calls) + ".stderr");
  ShellRun r;
  std::FILE* pipe = ::popen(("(" + command + ") 2>" + err_path.string()).c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buffer{};
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (std::filesystem::exists(err_path)) r.err = read_file(err_path);
  std::filesystem::remove(err_path);
  return r;
}

ShellRun run_momentkv(const std::string& args) { return run_shell(std::string(MOMENTKV_BIN) + " " + args); }

}  // namespace mkv::test
