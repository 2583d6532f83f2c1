// `momentkv serve` against clients that do not play by the rules (issue: serve that hostile clients
// cannot exhaust): the API key on every method of every route but the public ones, bodies sent where
// no route reads one refused before they are read, a port in use refused unless shared on purpose,
// bodies due whole within --body-timeout, and error messages that do not echo a huge input back.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "serve/server_process.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using nlohmann::json;

// Sends `headers` and then an endless chunked body in 64 KiB chunks until the server answers or
// closes, or `max_bytes` are sent. Returns the reply and the body bytes sent before it came.
struct StreamedRefusal {
  test::RawReply reply;
  std::size_t body_bytes_sent = 0;
};
StreamedRefusal stream_chunked_body(int port, const std::string& headers, std::size_t max_bytes) {
  const int fd = test::connect_loopback(port);
  StreamedRefusal out;
  ::send(fd, headers.data(), headers.size(), MSG_NOSIGNAL);
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'x') + "\r\n";
  char buffer[65536];
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {  // the server answered (or closed): stop sending, read what it sent
      for (;;) {
        pollfd q{fd, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
          out.reply.closed = true;
          break;
        }
        out.reply.text.append(buffer, std::size_t(n));
      }
      break;
    }
    if (out.body_bytes_sent >= max_bytes) break;
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) out.body_bytes_sent += std::size_t(n);
    else ::poll(&p, 1, 10);  // the socket's buffers are full: the server reads no more
  }
  ::close(fd);
  return out;
}

TEST(ServeHostile, TheApiKeyGuardsEveryMethodOnEveryRouteButThePublicOnes) {
  test::ServerProcess server({"-m", test::trained_model_path()}, {"MOMENTKV_API_KEY=sekret"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  for (const char* open : {"/health", "/v1/health", "/models", "/v1/models", "/"})
    EXPECT_EQ(c.Get(open)->status, 200) << open;
  EXPECT_EQ(json::parse(c.Get("/models")->body)["data"][0]["object"], "model");
  EXPECT_EQ(c.Get("/props")->status, 401);
  EXPECT_EQ(c.Get("/props", {{"X-Api-Key", "sekret"}})->status, 200);
  EXPECT_EQ(c.Get("/props", {{"Authorization", "Bearer sekret"}})->status, 200);
  EXPECT_EQ(c.Get("/props", {{"Authorization", "Bearer sekre"}})->status, 401);
  EXPECT_EQ(c.Get("/props", {{"Authorization", "bearer sekret"}})->status, 401);
  // Public paths are public for GET only: another method needs the key, and is refused unread.
  const int port = server.port();
  for (const char* request : {"POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                              "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                              "POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                              "DELETE /slots HTTP/1.1\r\nHost: x\r\n\r\n"}) {
    const test::RawReply reply = test::raw_exchange(port, request);
    EXPECT_EQ(reply.status(), 401) << request << "\n" << reply.text;
    EXPECT_TRUE(reply.closed) << request;
  }
  // The key is compared over the header's exact bytes: a NUL and more after it is another key.
  const std::string nul_key = std::string("GET /props HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret") + '\0' +
                              "junk\r\n\r\n";
  const test::RawReply nul = test::raw_exchange(port, nul_key);
  EXPECT_EQ(nul.status(), 401) << nul.text;
  // CORS preflights carry no credentials: never 401.
  const test::RawReply preflight = test::raw_exchange(
      port, "OPTIONS /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: http://a\r\nAccess-Control-Request-Method: POST\r\n"
            "Connection: close\r\n\r\n");
  EXPECT_NE(preflight.status(), 401) << preflight.text;
  EXPECT_NE(preflight.status(), 0) << preflight.text;
  // A chunked body without the key is refused at its headers.
  const StreamedRefusal keyless = stream_chunked_body(
      port, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", std::size_t(256) << 20);
  EXPECT_EQ(keyless.reply.status(), 401) << keyless.reply.text;
  EXPECT_LT(keyless.body_bytes_sent, std::size_t(32) << 20);
  EXPECT_EQ(c.Get("/health")->status, 200);  // still serving
}

TEST(ServeHostile, BodiesWhereNoRouteReadsOneAreRefusedBeforeTheyAreRead) {
  test::ServerProcess server({"-m", test::trained_model_path()});
  const long rss_before = server.rss_kib();
  for (const char* head : {"POST /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                           "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                           "POST /v1/models HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                           "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    // 256 MiB offered: the server answers at the headers, so at most the socket buffers' worth goes.
    const StreamedRefusal r = stream_chunked_body(server.port(), head, std::size_t(256) << 20);
    EXPECT_TRUE(r.reply.status() == 404 || r.reply.status() == 400) << head << "\n" << r.reply.text;
    EXPECT_LT(r.body_bytes_sent, std::size_t(32) << 20) << head;
  }
  EXPECT_LT(server.rss_kib() - rss_before, 64 * 1024) << "KiB of growth";  // nothing was buffered
  const test::RawReply get_body =
      test::raw_exchange(server.port(), "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd");
  EXPECT_EQ(get_body.status(), 400) << get_body.text;
  EXPECT_NE(get_body.body()["error"]["message"].get<std::string>().find("GET request carries no body"), std::string::npos);
  // Routes that read bodies still do, and GET without a body is as before.
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  EXPECT_EQ(c.Post("/tokenize", R"({"content": "Once upon a time"})", "application/json")->status, 200);
  EXPECT_EQ(c.Get("/v1/health")->status, 200);
}

TEST(ServeHostile, ErrorsQuoteAShortPrefixOfTheInput) {
  test::ServerProcess server({"-m", test::trained_model_path()});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  const std::string huge_press = "snapkv:" + std::string(1 << 20, 'w') + "=1";
  const auto res = c.Post("/v1/completions", json{{"prompt", "Once"}, {"kv_press", huge_press}}.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_LT(res->body.size(), 4096u);
  const std::string message = json::parse(res->body)["error"]["message"];
  EXPECT_NE(message.find("message cut"), std::string::npos) << message;
}

TEST(ServeHostile, APortInUseIsAnErrorUnlessSharedOnPurpose) {
  test::ServerProcess first({"-m", test::trained_model_path(), "--reuse-port"});
  const std::string second = std::string(MOMENTKV_BIN) + " serve -m " + test::trained_model_path() +
                             " --port " + std::to_string(first.port());
  int status = 0;
  const std::string refused = test::capture_output("timeout 30 " + second + " 2>&1", &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 124) << refused;
  EXPECT_NE(refused.find("already in use"), std::string::npos) << refused;
  // Both with --reuse-port: the second listens too (the kernel shares the connections).
  const std::string shared = test::capture_output("timeout 3 " + second + " --reuse-port 2>&1", &status);
  EXPECT_NE(shared.find("listening on http://127.0.0.1:" + std::to_string(first.port())), std::string::npos) << shared;
}

TEST(ServeHostile, ABodyThatDoesNotArriveWholeInTimeGets408) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--body-timeout", "2"});
  // A Content-Length larger than what is sent, then silence.
  const test::RawReply short_body = test::raw_exchange(
      server.port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\"", 10);
  EXPECT_EQ(short_body.status(), 408) << short_body.text;
  EXPECT_TRUE(short_body.closed);
  EXPECT_GT(short_body.seconds, 1.5);
  EXPECT_LT(short_body.seconds, 5.0);
  EXPECT_NE(short_body.body()["error"]["message"].get<std::string>().find("body did not arrive whole within 2 s"),
            std::string::npos) << short_body.text;
  // A body trickled a byte every 200 ms: each byte would restart a per-read timeout, not this one.
  const int fd = test::connect_loopback(server.port());
  const std::string head = "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const auto start = std::chrono::steady_clock::now();
  std::string reply;
  char buffer[4096];
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    if (::send(fd, " ", 1, MSG_NOSIGNAL) != 1) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      reply.append(buffer, std::size_t(n));
    }
  }
  ::close(fd);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(reply.find("408 Request Timeout"), std::string::npos) << reply;
  EXPECT_LT(seconds, 5.0);
  httplib::Client c("127.0.0.1", server.port());  // and the server goes on serving
  EXPECT_EQ(c.Post("/tokenize", R"({"content": "Once"})", "application/json")->status, 200);
}

TEST(ServeHostile, ComputeThreadsAreTheRunnersWhateverTheWorkersDo) {
  // 4 slots and 12 clients whose presses compress at the prompt and at every other decode step:
  // every HTTP worker that compressed used to start an OpenMP team of its own.
  test::ServerProcess server({"-m", test::trained_model_path(), "-t", "2", "-np", "4"});
  httplib::Client probe("127.0.0.1", server.port());
  ASSERT_EQ(probe.Get("/health")->status, 200);  // the HTTP pool is started by now
  const long idle = server.threads();
  ASSERT_GT(idle, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < 12; ++i)
    clients.emplace_back([&server, i] {
      httplib::Client c("127.0.0.1", server.port());
      c.set_read_timeout(120);
      const char* press = i % 3 == 0 ? "snapkv" : i % 3 == 1 ? "h2o:decode_slack=2" : "momentkv";
      const json body = {{"prompt", "Once upon a time there was a little girl who liked to play in the park"},
                         {"max_tokens", 8}, {"temperature", 0}, {"kv_press", press}, {"kv_budget", 16}};
      const auto res = c.Post("/v1/completions", body.dump(), "application/json");
      EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no reply");
    });
  for (std::thread& t : clients) t.join();
  // The runner's team of -t threads (one of them the runner itself) and nothing per worker.
  EXPECT_LE(server.threads(), idle + 2) << "threads at idle: " << idle;
}

TEST(ServeHostile, AmbiguousFramingIsRefused) {
  test::ServerProcess server({"-m", test::trained_model_path()});
  struct Case {
    const char* request;
    const char* message;
  };
  for (const Case& c : {Case{"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n{}",
                             "two Content-Length headers"},
                        Case{"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "2\r\n{}\r\n0\r\n\r\n",
                             "both Content-Length and Transfer-Encoding"}}) {
    const test::RawReply reply = test::raw_exchange(server.port(), c.request);
    EXPECT_EQ(reply.status(), 400) << reply.text;
    EXPECT_TRUE(reply.closed);
    EXPECT_NE(reply.body()["error"]["message"].get<std::string>().find(c.message), std::string::npos) << reply.text;
  }
  // The same Content-Length twice frames one body: accepted.
  const test::RawReply twice = test::raw_exchange(
      server.port(), "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\nContent-Length: 16\r\n"
                     "Connection: close\r\n\r\n{\"content\": \"a\"}");
  EXPECT_EQ(twice.status(), 200) << twice.text;
}

}  // namespace
}  // namespace mkv
