// `momentkv serve` through the official `openai` npm client (pinned in tests/serve/node, installed
// by scripts/setup.sh into a cache folder): completion, chat and both streamed, a per-request press
// as extra body fields, and an error the client raises with the server's status and param.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "serve/server_process.h"
#include "support/test_support.h"

namespace mkv {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where setup.sh installs the npm clients (the same rule as the script).
fs::path npm_dir() {
  if (const char* dir = std::getenv("MOMENTKV_NPM_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) return fs::path(cache) / "momentkv" / "npm";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache" / "momentkv" / "npm";
}

// stdout of a shell command; its exit status in *status.
std::string capture(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  *status = ::pclose(pipe);
  return out;
}

TEST(ServeOpenAiClient, CompletionChatStreamsAndAPressThroughTheOfficialClient) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed (scripts/setup.sh installs it)";
  if (!fs::exists(npm_dir() / "node_modules" / "openai"))
    GTEST_SKIP() << "the openai npm client is not installed in " << npm_dir() << " (scripts/setup.sh installs it)";
  test::ServerProcess server({"-m", test::trained_model_path(), "--chat-template", "chatml", "--api-key", "k-123"});
  const std::string script = std::string(MOMENTKV_SOURCE_DIR) + "/tests/serve/node/openai_client.cjs";
  int status = -1;
  const std::string out = capture("MOMENTKV_NPM_DIR='" + npm_dir().string() + "' node '" + script +
                                      "' http://127.0.0.1:" + std::to_string(server.port()) + "/v1 k-123",
                                  &status);
  ASSERT_EQ(status, 0) << out << "\nserver log:\n" << server.log();
  const json r = json::parse(out);
  // The same greedy text as the CLI (generate echoes the prompt, then the reply and a newline).
  const std::string cli = capture(std::string(MOMENTKV_BIN) + " generate -m " + test::trained_model_path() +
                                      " -p 'Once upon a time' -n 12 --temp 0 2>/dev/null",
                                  &status);
  ASSERT_EQ(status, 0);
  const std::string expected = cli.substr(std::string("Once upon a time").size(), cli.size() - 17);
  EXPECT_EQ(r["completion"], expected);
  EXPECT_EQ(r["completion_streamed"], expected);
  EXPECT_EQ(r["completion_finish"], "length");
  EXPECT_EQ(r["completion_tokens"], 12);
  EXPECT_EQ(r["chat_role"], "assistant");
  EXPECT_EQ(r["chat_streamed"], r["chat"]);
  EXPECT_LT(r["pressed_usage"]["kv_bytes_held"].get<int64_t>(), r["pressed_usage"]["kv_bytes_full"].get<int64_t>());
  EXPECT_NE(r["pressed_usage"]["kv_press"].get<std::string>().find("snapkv:"), std::string::npos);
  EXPECT_EQ(r["bad_press_status"], 400);
  EXPECT_EQ(r["bad_press_param"], "kv_press");
}

}  // namespace
}  // namespace mkv
