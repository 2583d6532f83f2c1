// momentkv serve: the OpenAI-compatible server (src/serve/server.h) on a loaded model. SIGINT and
// SIGTERM stop it: the listener closes, requests in progress finish, then the process exits.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "commands.h"
#include "core/error.h"
#include "serve/server.h"

namespace mkv::cli {

constexpr double kMaxKvMemoryMib = 16 << 20;  // --kv-memory: 16 TiB
constexpr int kMaxQueue = 24;  // --queue: waiting requests hold connection workers too (64 in all)
constexpr int kMaxSlots = 32;  // -np: each slot holds one of the server's 64 connection workers and a session

int run_serve(const ServeOptions& o) {
  MKV_CHECK(o.port >= 0 && o.port <= 65535, "--port must be in [0, 65535] (0 = any free port), got {}", o.port);
  MKV_CHECK(o.parallel >= 1 && o.parallel <= kMaxSlots, "-np must be in [1, {}], got {}", kMaxSlots, o.parallel);
  MKV_CHECK(o.timeout_seconds > 0, "--timeout must be positive (seconds), got {}", o.timeout_seconds);
  MKV_CHECK(o.header_timeout_seconds > 0, "--header-timeout must be positive (seconds), got {}", o.header_timeout_seconds);
  MKV_CHECK(o.body_timeout_seconds > 0, "--body-timeout must be positive (seconds), got {}", o.body_timeout_seconds);
  // Signals are taken by one thread (sigwait) rather than a handler: blocked here, before any
  // thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  LoadedModel m = load_model(o.model);
  serve::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.reuse_port = o.reuse_port;
  so.metrics = o.metrics;
  so.slots_endpoint = o.slots;
  so.web_page = o.web_page;
  for (std::size_t at = 0; at < o.cors_origins.size();) {
    const std::size_t comma = std::min(o.cors_origins.find(',', at), o.cors_origins.size());
    const std::string origin = o.cors_origins.substr(at, comma - at);
    MKV_CHECK(!origin.empty(), "--cors-origins: an empty origin in '{}' (expected e.g. http://localhost:3000,https://a.b)",
              o.cors_origins);
    so.cors_origins.push_back(origin);
    at = comma + 1;
  }
  so.system_fingerprint = "momentkv-" + build_commit();
  so.model_path = m.file->path();
  so.api_key = o.api_key;
  if (so.api_key.empty())
    if (const char* env = std::getenv("MOMENTKV_API_KEY")) so.api_key = env;
  so.timeout_seconds = o.timeout_seconds;
  so.header_timeout_seconds = o.header_timeout_seconds;
  so.body_timeout_seconds = o.body_timeout_seconds;
  so.model_name = o.alias.empty() ? std::filesystem::path(m.file->path()).stem().string() : o.alias;
  so.chat_template = o.chat_template;
  so.press = o.press;
  so.session = session_options(o.model, m, o.compress_each_chunk);
  so.parallel = o.parallel;
  MKV_CHECK(std::isfinite(o.kv_memory_mib) && o.kv_memory_mib >= 0 && o.kv_memory_mib <= kMaxKvMemoryMib,
            "--kv-memory must be in [0, {}] MiB (0 = no cap), got {}", kMaxKvMemoryMib, o.kv_memory_mib);
  so.kv_memory_bytes = std::size_t(o.kv_memory_mib * 1024 * 1024);
  MKV_CHECK(o.queue >= 1 && o.queue <= kMaxQueue, "--queue must be in [1, {}], got {}", kMaxQueue, o.queue);
  so.max_waiting = o.queue;
  MKV_CHECK(o.parallel <= m.transformer->max_batch(), "-np {} is above the batch size -ub {}: a decode batch holds one "
            "token per slot", o.parallel, m.transformer->max_batch());
  serve::Server server(*m.transformer, *m.tokenizer, so);
  const int port = server.bind();
  fmt::print(stderr, "momentkv serve: listening on http://{}:{} (model {}, press {}{})\n", o.host, port, so.model_name,
             so.press.spec(), so.api_key.empty() ? "" : ", API key required");
  std::thread signals([&server, stop_signals] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    fmt::print(stderr, "momentkv serve: {} received, finishing the requests in progress\n",
               signal == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  });
  signals.detach();
  server.run();
  fmt::print(stderr, "momentkv serve: stopped\n");
  return 0;
}

}  // namespace mkv::cli
