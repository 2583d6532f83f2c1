// The page at "/" in Debian's headless chromium, driven by puppeteer-core (tests/serve/node, pinned,
// installed by scripts/test.sh into a cache folder): a message typed and sent, the streamed reply
// checked in the DOM against `momentkv generate --temp 0`, and the KV bytes the request held shown
// beside the full cache's. Screenshots are kept in <build>/test-artifacts/.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "serve/server_process.h"
#include "support/test_support.h"

namespace mkv {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServeWebPage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v chromium >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "chromium is not installed (scripts/test.sh installs Debian's chromium)";
    if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
    if (!fs::exists(test::npm_client_dir() / "node_modules" / "puppeteer-core"))
      GTEST_SKIP() << "puppeteer-core is not installed in " << test::npm_client_dir() << " (scripts/test.sh installs it)";
    artifacts_ = fs::path(MOMENTKV_BIN).parent_path() / "test-artifacts";
    fs::create_directories(artifacts_);
  }
  // Sends `message` through the page with this press; the page's {user, reply, stats} as JSON.
  json send(const test::ServerProcess& server, const std::string& press, int budget, int max_tokens,
            const std::string& message, const std::string& screenshot) {
    const std::string script = std::string(MOMENTKV_SOURCE_DIR) + "/tests/serve/node/page_check.cjs";
    int status = -1;
    const std::string out = test::capture_output("MOMENTKV_NPM_DIR='" + test::npm_client_dir().string() + "' timeout 180 node '" + script +
                                        "' http://127.0.0.1:" + std::to_string(server.port()) + "/ " + press + " " +
                                        std::to_string(budget) + " " + std::to_string(max_tokens) + " '" + message +
                                        "' '" + (artifacts_ / screenshot).string() + "' 2>&1",
                                    &status);
    EXPECT_EQ(status, 0) << out;
    EXPECT_TRUE(fs::exists(artifacts_ / screenshot));
    return json::parse(out, nullptr, false);
  }
  fs::path artifacts_;
};

TEST_F(ServeWebPage, SendsAMessageAndShowsTheReplyAndTheKvBytes) {
  test::ServerProcess server({"-m", test::trained_model_path()});
  int status = -1;
  const std::string cli = test::capture_output(std::string(MOMENTKV_BIN) + " generate -m " + test::trained_model_path() +
                                      " -p 'Once upon a time' -n 12 --temp 0 2>/dev/null",
                                  &status);
  ASSERT_EQ(status, 0);
  const std::string expected = cli.substr(16, cli.size() - 17);  // the reply without the echoed prompt

  // The model has no chat template: the page falls back to /v1/completions.
  const json full = send(server, "full", 64, 12, "Once upon a time", "serve_page_full.png");
  EXPECT_EQ(full["user"], "Once upon a time");
  EXPECT_EQ(full["reply"], expected);
  // 5 prompt tokens x 4 layers x 2 KV heads x 132 bytes (a key and a value of 32 fp16 values, the
  // serve default cache type, and a 4-byte position).
  EXPECT_NE(full["stats"].get<std::string>().find("held after the prompt: 5280 of 5280 bytes (100.0%)"),
            std::string::npos) << full.dump();
  EXPECT_NE(full["model"].get<std::string>().find("stories-needle-2k"), std::string::npos);

  const json pressed = send(server, "snapkv", 8, 4, "Once upon a time, there was a little girl named Lily. She loved",
                            "serve_page_snapkv.png");
  EXPECT_EQ(pressed["replyClass"], "msg assistant") << pressed.dump();
  const std::string stats = pressed["stats"];
  std::smatch held;
  ASSERT_TRUE(std::regex_search(stats, held, std::regex(R"(held after the prompt: (\d+) of (\d+) bytes)"))) << stats;
  EXPECT_LT(std::stol(held[1]), std::stol(held[2]));
  EXPECT_NE(stats.find("press snapkv:"), std::string::npos) << stats;
}

}  // namespace
}  // namespace mkv
