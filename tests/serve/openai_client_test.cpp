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

TEST(ServeOpenAiClient, CompletionChatStreamsAndAPressThroughTheOfficialClient) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed (scripts/test.sh installs it)";
  if (!fs::exists(test::npm_client_dir() / "node_modules" / "openai"))
    GTEST_SKIP() << "the openai npm client is not installed in " << test::npm_client_dir() << " (scripts/test.sh installs it)";
  test::ServerProcess server({"-m", test::trained_model_path(), "--chat-template", "chatml", "--api-key", "k-123"});
  const std::string script = std::string(MOMENTKV_SOURCE_DIR) + "/tests/serve/node/openai_client.cjs";
  int status = -1;
  const std::string out = test::capture_output("MOMENTKV_NPM_DIR='" + test::npm_client_dir().string() + "' node '" + script +
                                      "' http://127.0.0.1:" + std::to_string(server.port()) + "/v1 k-123",
                                  &status);
  ASSERT_EQ(status, 0) << out << "\nserver log:\n" << server.log();
  const json r = json::parse(out);
  // The same greedy text as the CLI (generate echoes the prompt, then the reply and a newline).
  const std::string cli = test::capture_output(std::string(MOMENTKV_BIN) + " generate -m " + test::trained_model_path() +
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
