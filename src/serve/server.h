// `momentkv serve`: an OpenAI-compatible HTTP server (cpp-httplib) over the engine's one generation
// loop. Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions
// (server-sent events with "stream": true, ending in "data: [DONE]"), POST /completion (and
// /completions: llama-server's native shape, "content" and "stop_type", its stream ending with an
// event whose "stop" is true), POST /tokenize,
// POST /detokenize, GET /props and GET /slots (llama-server's), GET /metrics (Prometheus
// text), and a chat page at "/" (web_page.h). Each request may choose its own compression
// ("kv_press", "kv_budget", "kv_compression_ratio"); its usage reports the KV bytes it held.
// Errors are OpenAI's error body with the HTTP status (400, 401, 404, 411, 413, 414, 500, 503).
// A body is JSON whatever its Content-Type, up to max_body_bytes (chunked too); a POST without a
// length gets 411. A refusal made before the body was read closes the connection.
//
// Admission (kv_admission.h): a request reserves the KV bytes of its cache's peak and waits, in
// arrival order, until they fit under --kv-memory; past --queue waiting requests it gets 503 with
// Retry-After. `parallel` slots generate at once; their forward passes run on one ModelRunner, which batches
// the slots' decode steps into one pass over the weights and interleaves prefill chunks with them.
// A request waits (in arrival order) for a free slot. A client that disconnects ends its
// generation at the next token (or prefill chunk), or leaves the line it waits in. A connection
// whose request headers take longer than header_timeout_seconds is closed with 408.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/session.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace httplib {
class Server;
}

namespace mkv::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port (bind() returns it)
  std::string api_key;                  // non-empty: every route but the public ones (is_public_route)
                                        // needs "Authorization: Bearer KEY" or "X-Api-Key: KEY"
  bool reuse_port = false;              // --reuse-port: SO_REUSEPORT, several servers share the port
  bool metrics = false;                 // --metrics: GET /metrics answers (else 501, as llama-server)
  bool slots_endpoint = true;           // --slots / --no-slots: GET /slots answers (else 501)
  bool web_page = true;                 // --no-webui: GET / answers 404
  std::vector<std::string> cors_origins;  // --cors-origins: the origins answered with
                                          // Access-Control-Allow-Origin; empty = every origin (llama-server's)
  int timeout_seconds = 600;            // read/write timeout of a connection
  int header_timeout_seconds = 30;      // a request's headers are due this long after the connection's
                                        // start or its previous reply, or it is closed (header_deadline.h)
  int body_timeout_seconds = 60;        // a request's body is due whole this long after its reading began
  std::size_t max_body_bytes = 8 << 20; // larger request bodies get 413
  std::string model_name = "model";     // /v1/models id and the responses' "model"
  std::string model_path;               // /props model_path
  std::string system_fingerprint;       // the OpenAI responses' system_fingerprint: the build
  std::string chat_template;            // override of the model's template (llama3 | chatml | qwen3)
  PressConfig press;                    // the default compression (--press with its budget, which
                                        // request presses without one take)
  SessionOptions session;               // how requests' sessions run (n_ctx 0: the model's; the press is the request's)
  int parallel = 1;                     // slots (-np): requests generating at once, at most the model's batch limit
  std::size_t kv_memory_bytes = 0;      // --kv-memory: cap on the KV bytes all requests reserve (0 = none)
  int max_waiting = 16;                 // --queue: requests that may wait for memory or a slot; more get 503
};

// Routes anyone may call without the API key, as llama-server leaves them open: GET (or HEAD)
// /health, /v1/health, /models, /v1/models, the chat page / (which asks for the key itself), and
// CORS preflights (OPTIONS, which carry no credentials). Every other method and route needs the key.
bool is_public_route(std::string_view method, std::string_view path);

// Whether `a` and `b` are the same bytes, in time that depends on their lengths only.
bool constant_time_equal(std::string_view a, std::string_view b);

class Server {
 public:
  Server(Transformer& model, const Tokenizer& tokenizer, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket (SO_REUSEADDR; SO_REUSEPORT only with reuse_port); returns the
  // port. MkvError when the address cannot be bound, naming a port already in use.
  int bind();
  // Serves until stop() (from another thread or a signal handler thread).
  void run();
  void stop();

  struct State;  // the handlers' shared state (model, counters, the slot)

 private:
  std::unique_ptr<State> state_;
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace mkv::serve
