#include "serve/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <strings.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/message_text.h"
#include "core/threading.h"
#include "engine/generation.h"
#include "engine/model_runner.h"
#include "serve/client_connection.h"
#include "serve/header_deadline.h"
#include "serve/kv_admission.h"
#include "serve/openai_api.h"
#include "serve/ticket_line.h"
#include "serve/web_page.h"

namespace mkv::serve {
namespace {

using nlohmann::json;

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Invalid UTF-8 (from a request, echoed in a message or a reply piece) is sent as U+FFFD: dump()
// would otherwise throw.
std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error.status, error_body(error)); }

// A refusal sent before the request's body was read, then the connection closed, so the unread
// body is never parsed as the next request. httplib 0.11.4 keeps a connection open whatever the
// response's Connection header says; it closes it when a content provider fails, so the body goes
// out through a provider that fails once it has written it.
void send_error_and_close(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_header("Connection", "close");
  const auto body = std::make_shared<const std::string>(dump(error_body(error)));
  res.set_content_provider(body->size(), "application/json",
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false;  // closes the connection
                           });
}

ApiError body_too_large(std::size_t max_body_bytes) {
  return ApiError(413, "invalid_request_error", fmt::format("the request body is larger than {} bytes", max_body_bytes));
}

// The key a request carries matches: "Authorization: Bearer KEY" or "X-Api-Key: KEY", every header
// of those names tried, each compared over its exact bytes (httplib's get_header_value would stop
// at a NUL inside the value).
bool carries_api_key(const httplib::Request& req, const std::string& key) {
  bool match = false;
  for (auto [it, end] = req.headers.equal_range("Authorization"); it != end; ++it)
    match |= it->second.starts_with("Bearer ") && constant_time_equal(std::string_view(it->second).substr(7), key);
  for (auto [it, end] = req.headers.equal_range("X-Api-Key"); it != end; ++it)
    match |= constant_time_equal(it->second, key);
  return match;
}

// Whether the request declares a body: chunked, or a Content-Length other than 0.
bool declares_body(const httplib::Request& req) {
  if (strcasecmp(req.get_header_value("Transfer-Encoding").c_str(), "chunked") == 0) return true;
  const auto length = req.headers.find("Content-Length");
  return length != req.headers.end() && length->second != "0";
}

bool has_content(const httplib::Response& res) { return !res.body.empty() || res.content_provider_ != nullptr; }

// The refusal of a request whose body httplib 0.11.4 would wait for in vain, or read whole only to
// refuse it, decided from its headers: a POST, PUT or PATCH body with neither Content-Length nor
// chunked Transfer-Encoding (httplib reads it until the connection closes), a Content-Length that
// is no number (a negative one reads as a huge unsigned one) or one over the limit. nullopt: the
// body can be read.
std::optional<ApiError> unreadable_body(const httplib::Request& req, std::size_t max_body_bytes) {
  // Framing that two parsers (a proxy's and ours) could read differently: refused on any method.
  const auto [first_length, lengths_end] = req.headers.equal_range("Content-Length");
  for (auto it = first_length; it != lengths_end; ++it)
    if (it->second != first_length->second)
      return ApiError(400, "invalid_request_error", "two Content-Length headers with different values");
  const bool chunked = strcasecmp(req.get_header_value("Transfer-Encoding").c_str(), "chunked") == 0;
  if (chunked && first_length != lengths_end)
    return ApiError(400, "invalid_request_error", "both Content-Length and Transfer-Encoding: chunked: give one");
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH") return std::nullopt;
  if (chunked) return std::nullopt;
  if (!req.has_header("Content-Length"))
    return ApiError(411, "invalid_request_error",
                    "a Content-Length header is required (or Transfer-Encoding: chunked): the body's length is unknown");
  const std::string declared = req.get_header_value("Content-Length");
  uint64_t length = 0;
  const auto [end, error] = std::from_chars(declared.data(), declared.data() + declared.size(), length);
  const bool digits_only = error != std::errc::invalid_argument && end == declared.data() + declared.size();
  if (!digits_only) return ApiError(400, "invalid_request_error", "the Content-Length header must be a number of bytes");
  if (error == std::errc::result_out_of_range || length > max_body_bytes) return body_too_large(max_body_bytes);
  return std::nullopt;
}

constexpr const char* kUnreadableBody =
    "the request body could not be read (it ended before its Content-Length, or its chunked encoding is malformed)";

// The message of an error httplib answered itself, before or while it read the request: what was
// wrong where httplib lets us tell.
std::string http_error_message(const httplib::Request& req, int status) {
  switch (status) {
    case 404:
      return fmt::format("no route {} {}", req.method, req.path);
    case 414:
      return fmt::format("the request URI is longer than {} bytes", CPPHTTPLIB_REQUEST_URI_MAX_LENGTH);
    case 400:
      // httplib fills the path once the request line parsed, and REMOTE_ADDR once the headers did.
      if (req.path.empty()) return "the request line is malformed (expected 'METHOD /path HTTP/1.1')";
      if (!req.has_header("REMOTE_ADDR")) return "a request header is malformed or too long";
      if (req.method != "GET" && req.method != "HEAD" && req.method != "POST" && req.method != "PUT" &&
          req.method != "PATCH" && req.method != "DELETE" && req.method != "OPTIONS")
        return fmt::format("the method {} is not supported", req.method);
      return kUnreadableBody;
    default:
      return fmt::format("HTTP {}", status);
  }
}

// A POST route over the request's JSON body, read here (a content-reader route) so that its size is
// capped when it comes chunked too: httplib 0.11.4 caps only a declared Content-Length.
// `reading(req, true)` runs before the body is read, `reading(req, false)` once it is (the body's
// deadline, HeaderDeadline).
using BodyHandler = std::function<void(const httplib::Request& req, const std::string& body, httplib::Response& res)>;
using BodyReading = std::function<void(const httplib::Request& req, bool started)>;
httplib::Server::HandlerWithContentReader body_route(std::size_t max_body_bytes, BodyReading reading, BodyHandler handler) {
  return [max_body_bytes, reading = std::move(reading), handler = std::move(handler)](
             const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
    std::string body;
    bool too_large = false;
    reading(req, true);
    const bool whole = read([&](const char* data, size_t size) {
      too_large = body.size() + size > max_body_bytes;
      if (!too_large) body.append(data, size);
      return !too_large;
    });
    reading(req, false);
    if (too_large)  // the rest of the body is unread
      send_error_and_close(res, body_too_large(max_body_bytes));
    else if (!whole)
      send_error_and_close(res, ApiError(400, "invalid_request_error", kUnreadableBody));
    else
      handler(req, body, res);
  };
}

// Adds one to a gauge for the life of the scope, whatever leaves it.
class GaugeHold {
 public:
  explicit GaugeHold(std::atomic<int64_t>& gauge) : gauge_(gauge) { ++gauge_; }
  ~GaugeHold() { --gauge_; }
  GaugeHold(const GaugeHold&) = delete;
  GaugeHold& operator=(const GaugeHold&) = delete;

 private:
  std::atomic<int64_t>& gauge_;
};

// httplib's server with its listening socket reachable: the library listens with a backlog of 5
// (fixed when Debian built it), which drops connections in a burst of clients (each retried a
// second later by TCP); bind() listens again with the system's maximum.
class HttpServer : public httplib::Server {
 public:
  int listening_socket() const { return svr_sock_; }
};

// The slots: `count` sequences at a time, granted in arrival order (a plain semaphore lets a late
// request overtake waiting ones again and again). Holding a granted Turn holds a slot: the free
// one with the lowest id.
class FifoSlots {
 public:
  explicit FifoSlots(int count) : held_(std::size_t(count), false) {}

  class Turn {
   public:
    // Waits for a slot. `abandon`, asked every 50 ms while waiting, gives up the place in the
    // line when it returns true (the client left): the Turn is then not granted, and the requests
    // behind move up.
    Turn(FifoSlots& slots, const std::function<bool()>& abandon) : slots_(slots) {
      std::unique_lock lock(slots_.mutex_);
      const uint64_t ticket = slots_.line_.join();
      granted_ = wait_unless_abandoned(
          slots_.changed_, lock, [&] { return slots_.line_.first(ticket) && slots_.free_slot() != slots_.held_.end(); }, abandon);
      if (granted_) {
        slots_.line_.serve();
        const auto slot = slots_.free_slot();
        *slot = true;
        id_ = int(slot - slots_.held_.begin());
      } else {
        slots_.line_.leave(ticket);
      }
      lock.unlock();
      slots_.changed_.notify_all();  // the next ticket may take another free slot, or move up
    }
    ~Turn() {
      if (!granted_) return;
      {
        std::lock_guard lock(slots_.mutex_);
        slots_.held_[std::size_t(id_)] = false;
      }
      slots_.changed_.notify_all();
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

    bool granted() const { return granted_; }

   private:
    FifoSlots& slots_;
    bool granted_ = false;
    int id_ = -1;  // the slot held, once granted
  };

  int busy() const {
    std::lock_guard lock(mutex_);
    return int(std::count(held_.begin(), held_.end(), true));
  }
  // Per slot id, whether a request holds it.
  std::vector<bool> held() const {
    std::lock_guard lock(mutex_);
    return held_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // The free slot with the lowest id, or held_.end() (mutex_ held).
  std::vector<bool>::iterator free_slot() { return std::find(held_.begin(), held_.end(), false); }

  std::vector<bool> held_;  // (count) per slot id: held by a granted Turn
  TicketLine line_;         // the requests waiting for a slot (mutex_ held)
};

}  // namespace

bool is_public_route(std::string_view method, std::string_view path) {
  if (method == "OPTIONS") return true;
  if (method != "GET" && method != "HEAD") return false;
  for (std::string_view open : {"/", "/health", "/v1/health", "/models", "/v1/models"})
    if (path == open) return true;
  return false;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

struct Server::State {
  Transformer& model;
  const Tokenizer& tokenizer;
  ServerOptions options;
  int n_ctx;
  FifoSlots slots;                     // options.parallel sequences at a time, in arrival order
  ModelRunner runner;                  // every forward pass; the slots' decode steps batched
  KvAdmission admission;               // KV bytes reserved per request, under --kv-memory
  KvCache empty_cache;                 // no rows: the size of a row and of a full cache
  std::atomic<uint64_t> request_count{0};
  // /metrics counters
  std::atomic<int64_t> requests_total{0}, requests_cancelled_total{0}, prompt_tokens_total{0}, completion_tokens_total{0};
  std::atomic<int64_t> kv_bytes_held{0}, kv_bytes_full{0}, requests_processing{0};
  std::atomic<double> decode_seconds_total{0.0}, prompt_seconds_total{0.0};
  std::unique_ptr<HeaderDeadline> header_deadline;  // made by bind(), once the port is known
  std::set<std::string> body_paths;                 // the POST routes that read a body

  State(Transformer& m, const Tokenizer& t, ServerOptions o)
      : model(m), tokenizer(t), options(std::move(o)),
        n_ctx(options.session.n_ctx > 0 ? options.session.n_ctx : m.config().context_length),
        slots(options.parallel), runner(m, options.parallel),
        admission(options.kv_memory_bytes, options.max_waiting),
        empty_cache(m.cache_shape(), options.session.kv_storage) {}

  // Rows a request may add while decoding.
  int64_t decode_rows(const CompletionRequest& r, int64_t prompt) const {
    return r.max_tokens >= 0 ? std::min<int64_t>(r.max_tokens, n_ctx - prompt) : n_ctx - prompt;
  }

  // The KV bytes a request's cache holds (KvAdmission's two parts): steady, the rows per KV head
  // once its prompt is compressed (the kept rows, or the whole prompt for the full cache) plus
  // every decoded token, and the press's moment statistics; prefill, what the prompt needs beyond
  // that while it is read (the whole prompt before its compression, or the budget plus one chunk
  // with --compress-chunks).
  struct KvNeed {
    std::size_t steady = 0, prefill = 0;
  };
  KvNeed kv_need(const CompletionRequest& r, const Press* press, const PressConfig& config, int64_t prompt) const {
    const int64_t gen = decode_rows(r, prompt);
    int64_t steady_rows = prompt + gen, prefill_rows = 0;
    if (press) {
      const std::optional<Budget> budget = config.budget();
      const int64_t kept = budget ? std::min<int64_t>(prompt, budget->resolve(int32_t(prompt))) : prompt;
      steady_rows = kept + gen;
      prefill_rows = options.session.compress_each_chunk ? std::min<int64_t>(prompt, kept + options.session.ubatch)
                                                         : prompt;
    }
    const ModelConfig& c = model.config();
    const int64_t moments =
        press ? int64_t(c.n_layers) * c.n_kv_heads * press->moment_numbers_per_head(c.press_geometry()) * 4 : 0;
    KvNeed need;
    need.steady = std::size_t(empty_cache.uncompressed_bytes(steady_rows) + moments);
    if (prefill_rows > steady_rows)
      need.prefill = std::size_t(empty_cache.uncompressed_bytes(prefill_rows) - empty_cache.uncompressed_bytes(steady_rows));
    return need;
  }

  // The prompt tokens of a request; ApiError when it is empty or does not fit the context.
  // A chat request's messages rendered by the model's template (or --chat-template), ending with
  // the assistant's turn; ApiError when there is no template.
  std::string chat_prompt(const CompletionRequest& r) const {
    try {
      return ChatTemplate::for_vocab(tokenizer.vocab(), options.chat_template).render(r.messages, true);
    } catch (const MkvError& e) {
      throw ApiError(400, "invalid_request_error", fmt::format("chat completions need a chat template: {}", e.what()),
                     "messages");
    }
  }

  std::vector<int32_t> prompt_tokens(const CompletionRequest& r) const {
    const std::string prompt = r.chat ? chat_prompt(r) : r.prompt;
    // Token ids are fed as they are (llama-server adds no BOS to them either).
    std::vector<int32_t> tokens =
        r.prompt_ids.empty() ? tokenizer.encode(prompt, /*add_special=*/true, /*parse_special=*/r.chat) : r.prompt_ids;
    if (tokens.empty()) throw ApiError(400, "invalid_request_error", "the prompt is empty", r.chat ? "messages" : "prompt");
    if (int64_t(tokens.size()) >= n_ctx) {
      ApiError error(400, "exceed_context_size_error",
                     fmt::format("the prompt has {} tokens, the context holds {}", tokens.size(), n_ctx),
                     r.chat ? "messages" : "prompt");
      error.extra = {{"n_prompt_tokens", tokens.size()}, {"n_ctx", n_ctx}};  // llama-server's fields
      throw error;
    }
    return tokens;
  }

  // Receives the reply as it becomes final, with the log-probabilities of the tokens picked since the
  // previous piece (when the request asked); false: the client left.
  using ReplySink = std::function<bool(std::string_view text, std::span<const TokenLogprob> logprobs)>;

  // Runs one generation; on_text receives the reply as it becomes final.
  // press: null for the full cache. reservation: shrunk once the prompt is compressed. client:
  // asked while the prompt waits for its prefill turn and between its prefill chunks.
  CompletionOutcome run(const CompletionRequest& r, Press* press, std::span<const int32_t> tokens, Sampler& sampler,
                        KvAdmission::Reservation& reservation, const ClientConnection& client,
                        const ReplySink& on_text) {
    SessionOptions so = options.session;
    so.n_ctx = n_ctx;
    so.press = press;
    so.runner = &runner;
    const RunnerAttachment attached(&runner);
    CompletionOutcome out;
    out.press = press ? press->spec() : "full";
    const auto client_left = [&client] { return client.gone(); };
    // One prompt at a time holds the prefill headroom; a client that leaves meanwhile leaves the line.
    if (!reservation.begin_prefill(client_left)) {
      cancelled_before_start();
      out.cancelled = true;
      return out;
    }
    Session session(model, so);
    GenerationParams params;
    params.max_new_tokens = r.max_tokens;
    params.ignore_eos = r.ignore_eos;
    params.stop = r.stop;
    params.reply_starts_text = r.chat;  // a completion continues its prompt; a chat reply stands alone
    GenerationCallbacks callbacks;
    callbacks.pick = [&](std::span<const float> logits) {
      const int32_t token = sampler.sample(logits);
      const bool ends = !r.ignore_eos && tokenizer.is_end_of_generation(token);  // the loop's test: not a reply token
      if (r.logprobs >= 0 && !ends)
        out.logprobs.push_back(
            token_logprob(logits, token, r.logprobs, [this](int32_t id) { return tokenizer.token_to_piece(id); }));
      return token;
    };
    std::size_t logprobs_given = 0;  // entries of out.logprobs handed to on_text so far
    callbacks.on_text = [&](std::string_view text) {
      const auto fresh = std::span<const TokenLogprob>(out.logprobs).subspan(logprobs_given);
      logprobs_given = out.logprobs.size();
      return on_text(text, fresh);
    };
    callbacks.keep_going = [&] { return !client_left(); };
    callbacks.on_prompt = [&] {
      const KvCache& cache = session.cache();
      out.kv_bytes_held = int64_t(cache.bytes_held());
      out.kv_bytes_full = cache.uncompressed_bytes(session.n_past());
      reservation.shrink(cache.bytes_held() +
                         std::size_t(cache.uncompressed_bytes(decode_rows(r, session.n_past()))));
      reservation.end_prefill();
    };
    const GenerationResult g = generate(session, tokenizer, {tokens, {}}, params, callbacks);
    out.text = g.text;
    out.prompt_tokens = g.prompt_tokens;
    out.completion_tokens = int64_t(g.tokens.size());
    out.finish_reason = g.stop == StopReason::MaxTokens || g.stop == StopReason::ContextFull ? "length" : "stop";
    out.cancelled = g.stop == StopReason::Cancelled;
    out.stop_type = g.stop == StopReason::EndOfGeneration ? "eos" : g.stop == StopReason::StopString ? "word" : "limit";
    out.stopping_word = g.stop_string;
    if (g.stop == StopReason::StopString)  // nothing past the stop string's cut
      for (std::size_t i = 0, offset = 0; i < out.logprobs.size(); offset += out.logprobs[i++].chosen.piece.size())
        if (offset >= g.text.size()) {
          out.logprobs.resize(i);
          break;
        }
    out.prompt_seconds = g.prefill_seconds;
    out.decode_seconds = g.decode_seconds;
    requests_total += 1;
    requests_cancelled_total += out.cancelled;
    prompt_tokens_total += out.prompt_tokens;
    completion_tokens_total += out.completion_tokens;
    kv_bytes_held = out.kv_bytes_held;
    kv_bytes_full = out.kv_bytes_full;
    decode_seconds_total = decode_seconds_total + g.decode_seconds;
    prompt_seconds_total = prompt_seconds_total + g.prefill_seconds;
    return out;
  }

  // A request whose client left before its generation started: counted, not run.
  void cancelled_before_start() { ++requests_cancelled_total; }

  // The API a completion route speaks.
  enum class Api { Completions, Chat, Native };  // /v1/completions, /v1/chat/completions, /completion

  void completion(const httplib::Request& req, const std::string& body, httplib::Response& res, Api api) {
    const bool chat = api == Api::Chat;
    CompletionRequest r = parse_completion_request(body, chat, std::random_device{}(), tokenizer.n_vocab());
    r.native = api == Api::Native;
    resolve_logit_bias(r, tokenizer.n_vocab(), [this](const std::string& text) { return tokenizer.encode(text, false, false); });
    const PressConfig press = request_press(r, options.press);
    auto sampler = std::make_shared<Sampler>([&] {
      try {
        return Sampler(r.sampling);
      } catch (const MkvError& e) {
        throw ApiError(400, "invalid_request_error", e.what(), "temperature");
      }
    }());
    const ResponseHeader header{fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", ++request_count), unix_seconds(),
                                r.model.empty() ? options.model_name : r.model, options.system_fingerprint};
    const std::string& model_name = header.model;
    const std::vector<int32_t> tokens = prompt_tokens(r);
    const std::shared_ptr<Press> press_object(press.make_or_null().release());
    const KvNeed need = kv_need(r, press_object.get(), press, int64_t(tokens.size()));
    const std::size_t peak = need.steady + need.prefill;
    // Checked while the request waits for memory or a slot, before its generation starts and after
    // each reply piece: a client that left stops it (requests_cancelled_total counts those).
    const auto client = std::make_shared<const ClientConnection>(req);
    const auto client_gone = [&client] { return client->gone(); };
    KvAdmission::Refusal refusal = KvAdmission::Refusal::None;
    std::shared_ptr<KvAdmission::Reservation> reservation =
        admission.reserve(need.steady, refusal, need.prefill, client_gone);  // in arrival order
    if (refusal == KvAdmission::Refusal::Abandoned) return cancelled_before_start();
    if (refusal == KvAdmission::Refusal::TooLarge)
      throw ApiError(400, "invalid_request_error",
                     fmt::format("this request needs up to {:.1f} MiB of KV cache ({} prompt tokens, up to {} generated, "
                                 "press {}); the server's --kv-memory is {:.1f} MiB",
                                 double(peak) / (1 << 20), tokens.size(), decode_rows(r, int64_t(tokens.size())),
                                 press.spec(), double(admission.capacity()) / (1 << 20)),
                     "max_tokens");
    if (refusal == KvAdmission::Refusal::QueueFull) {
      res.set_header("Retry-After", "1");
      throw ApiError(503, "unavailable_error",
                     fmt::format("the server is busy: {} requests are waiting (--queue {}); retry later",
                                 admission.waiting(), options.max_waiting));
    }
    std::shared_ptr<FifoSlots::Turn> held;
    {
      const KvAdmission::Waiting waiting(admission);
      // Waits for the requests that came first.
      held = std::make_shared<FifoSlots::Turn>(slots, client_gone);
    }
    if (!held->granted()) return cancelled_before_start();
    if (!r.stream) {
      if (client->gone()) return cancelled_before_start();
      const GaugeHold processing(requests_processing);
      const CompletionOutcome out =
          run(r, press_object.get(), tokens, *sampler, *reservation, *client,
              [&](std::string_view, std::span<const TokenLogprob>) { return !client->gone(); });
      if (out.cancelled) return;  // nobody to reply to
      send_json(res, 200, r.native ? native_response(r, out, model_name, out.text)
                                   : completion_response(r, out, header));
      return;
    }
    // Server-sent events; the provider runs on this connection's thread after the handler returns
    // and keeps the slot until the stream ends.
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, r, press_object, reservation, tokens, sampler, held, header, client](
            size_t, httplib::DataSink& sink) mutable {
          auto event = [&](const json& body) {
            const std::string line = "data: " + dump(body) + "\n\n";
            return sink.is_writable() && sink.write(line.data(), line.size());
          };
          if (client->gone()) {  // nobody to stream to: close
            cancelled_before_start();
            return false;
          }
          const std::string& model_name = header.model;
          {
            const GaugeHold processing(requests_processing);  // given back before the stream ends
            try {
              bool connected = !r.chat || r.native || event(stream_role_chunk(header));  // the role, before any text
              std::size_t streamed_bytes = 0;  // the reply's bytes before this piece (completions' text_offset)
              const CompletionOutcome out = run(r, press_object.get(), tokens, *sampler, *reservation, *client,
                                                [&](std::string_view piece, std::span<const TokenLogprob> logprobs) {
                const std::string text(piece);
                auto chunk = [&] {
                  if (r.native) return native_stream_piece(r, text, logprobs);
                  const json chunk_logprobs = r.logprobs >= 0 ? openai_logprobs(r, logprobs, streamed_bytes) : json(nullptr);
                  return stream_chunk(r, header, text, std::nullopt, chunk_logprobs);
                };
                connected = connected && !client->gone() && event(chunk());
                streamed_bytes += text.size();
                return connected;
              });
              // The slot and the KV memory are free before the last events go out: a client that
              // sends its next request as soon as it reads [DONE] finds the slot free.
              held.reset();
              reservation.reset();
              connected = connected && !out.cancelled;  // its client left while it waited for its prefill turn
              if (connected && r.native) {  // llama-server's native stream ends with stop: true, no [DONE]
                json last = native_response(r, out, model_name, "");
                last.erase("completion_probabilities");  // the pieces carried them
                event(last);
              } else if (connected) {
                event(stream_chunk(r, header, "", out.finish_reason));
                if (r.include_usage)
                  event({{"id", header.id}, {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
                         {"created", header.created}, {"model", model_name},
                         {"system_fingerprint", header.system_fingerprint}, {"choices", json::array()},
                         {"usage", usage_json(out)}});
                const std::string done = "data: [DONE]\n\n";
                sink.write(done.data(), done.size());
              }
            } catch (const std::exception& e) {  // no exception may leave a content provider
              event(error_body(ApiError(500, "server_error", e.what())));
            }
          }
          sink.done();
          return true;
        });
  }

  std::string metrics() const {
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
      out += fmt::format("# HELP momentkv:{} {}\n# TYPE momentkv:{} {}\nmomentkv:{} {}\n", name, help, name, type, name, value);
    };
    // Under llama-server's name too (its dashboards and tests read llamacpp:*).
    auto both = [&](const char* name, const char* type, const char* help, double value) {
      metric(name, type, help, value);
      out += fmt::format("# HELP llamacpp:{} {}\n# TYPE llamacpp:{} {}\nllamacpp:{} {}\n", name, help, name, type, name, value);
    };
    metric("requests_total", "counter", "generations run (to their end, or until their client left)", double(requests_total));
    metric("requests_cancelled_total", "counter",
           "generation requests stopped (or never started) because their client left", double(requests_cancelled_total));
    both("prompt_tokens_total", "counter", "prompt tokens processed", double(prompt_tokens_total));
    both("prompt_seconds_total", "counter", "seconds spent reading prompts (their compression included)",
         prompt_seconds_total.load());
    both("tokens_predicted_total", "counter", "tokens generated", double(completion_tokens_total));
    both("tokens_predicted_seconds_total", "counter", "seconds spent generating", decode_seconds_total.load());
    both("prompt_tokens_seconds", "gauge", "prompt tokens read per second, on average",
         prompt_seconds_total.load() > 0 ? double(prompt_tokens_total) / prompt_seconds_total.load() : 0.0);
    both("predicted_tokens_seconds", "gauge", "tokens generated per second, on average",
         decode_seconds_total.load() > 0 ? double(completion_tokens_total) / decode_seconds_total.load() : 0.0);
    metric("kv_bytes_held", "gauge", "KV cache bytes the last request held after its prompt", double(kv_bytes_held));
    metric("kv_bytes_saved", "gauge", "KV cache bytes compression saved on the last request",
           double(kv_bytes_full - kv_bytes_held));
    metric("header_timeouts_total", "counter", "connections closed because a request's headers were late (408)",
           double(header_deadline ? header_deadline->closed() : 0));
    both("requests_processing", "gauge", "requests generating now", double(requests_processing));
    both("requests_deferred", "gauge", "requests waiting for KV memory or a slot", double(admission.waiting()));
    metric("slots_total", "gauge", "slots (-np)", double(options.parallel));
    metric("kv_bytes_reserved", "gauge", "KV bytes the requests in progress reserve (--kv-memory)", double(admission.reserved()));
    metric("kv_bytes_capacity", "gauge", "--kv-memory in bytes (0 = no cap)", double(admission.capacity()));
    metric("slots_busy", "gauge", "slots generating now", double(slots.busy()));
    const ModelRunner::Stats runs = runner.stats();
    metric("decode_batches_total", "counter", "batched decode passes over the weights", double(runs.decode_batches));
    both("n_decode_total", "counter", "forward passes: decode batches and prompt chunks",
         double(runs.decode_batches + runs.exclusive_jobs));
    metric("decode_batch_steps_total", "counter", "decode steps those passes ran", double(runs.decode_steps));
    metric("decode_batch_max", "gauge", "the largest decode batch so far", double(runs.max_batch));
    return out;
  }
};

Server::Server(Transformer& model, const Tokenizer& tokenizer, ServerOptions options)
    : state_(std::make_unique<State>(model, tokenizer, std::move(options))), http_(std::make_unique<HttpServer>()) {
  State& s = *state_;
  httplib::Server& http = *http_;
  http.set_payload_max_length(s.options.max_body_bytes);
  // SO_REUSEADDR (a restart binds at once past TIME_WAIT; Linux still refuses a second listener);
  // SO_REUSEPORT, which lets another process listen on the port and take a share of its
  // connections, only when asked (httplib's default sets it always).
  http.set_socket_options([reuse_port = s.options.reuse_port](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (reuse_port) ::setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
  });
  http.set_read_timeout(s.options.timeout_seconds);
  http.set_write_timeout(s.options.timeout_seconds);
  http.set_keep_alive_max_count(1000);  // requests per connection before the server closes it
  // Every open connection holds a worker (keep-alive, streams, requests waiting for the slot).
  http.new_task_queue = [] { return new httplib::ThreadPool(64); };

  // Idle connections close (silently) after the keep-alive wait, well before their next headers
  // would be late (408).
  http.set_keep_alive_timeout(std::clamp(s.options.header_timeout_seconds / 2, 1, 5));
  http.set_logger([&s](const httplib::Request& req, const httplib::Response&) {
    if (s.header_deadline) s.header_deadline->reply_sent(req);
  });
  // Runs once a request's headers are read, before httplib reads any of its body: every refusal
  // here closes the connection with the body unread.
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    // An HTTP worker starts no OpenMP team of its own: the compute threads are the runner's (-t).
    run_serially_here();
    if (s.header_deadline) s.header_deadline->headers_read(req);
    // Every body is JSON whatever its declared Content-Type (llama-server reads it so): without the
    // header httplib parses neither a form body (which it caps at 8 KiB) nor a multipart one. The
    // request is httplib's own non-const object, passed here as const.
    const_cast<httplib::Request&>(req).headers.erase("Content-Type");
    // CORS, as llama-server: every reply names the request's origin as allowed (when it is one of
    // --cors-origins, or any without that list), refusals included.
    if (const std::string origin = req.get_header_value("Origin"); !origin.empty()) {
      const auto& allowed = s.options.cors_origins;
      if (allowed.empty() || std::find(allowed.begin(), allowed.end(), origin) != allowed.end()) {
        res.set_header("Access-Control-Allow-Origin", origin);
        res.set_header("Vary", "Origin");
      }
    }
    if (!s.options.api_key.empty() && !is_public_route(req.method, req.path) && !carries_api_key(req, s.options.api_key)) {
      send_error_and_close(res, ApiError(401, "authentication_error", "Invalid API Key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (const std::optional<ApiError> refusal = unreadable_body(req, s.options.max_body_bytes)) {
      send_error_and_close(res, *refusal);
      return httplib::Server::HandlerResponse::Handled;
    }
    // A body sent where no route reads one: httplib would read it whole (a chunked one without any
    // limit) only to answer 404.
    if (declares_body(req) && !(req.method == "POST" && s.body_paths.count(req.path))) {
      const bool carries_none = req.method != "POST" && req.method != "PUT" && req.method != "PATCH";
      send_error_and_close(res, carries_none ? ApiError(400, "invalid_request_error",
                                                        fmt::format("a {} request carries no body", req.method))
                                             : ApiError(404, "not_found_error",
                                                        fmt::format("no route {} {}", req.method, req.path)));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (has_content(res)) return httplib::Server::HandlerResponse::Unhandled;
    const std::string message = http_error_message(req, res.status);
    if (res.status == 404)  // no route: the request was read whole
      send_error(res, ApiError(404, "not_found_error", message));
    else  // httplib refused the request while reading it: what is left of it cannot be framed
      send_error_and_close(res, ApiError(res.status, "invalid_request_error", message));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, "server_error", e.what()));
    } catch (...) {
      send_error(res, ApiError(500, "server_error", "unknown error"));
    }
  });

  if (s.options.web_page)
    http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(web_page(), "text/html; charset=utf-8"); });
  // CORS preflights: any route, no key (the browser sends none), an empty 200 (llama-server's).
  http.Options(R"(.*)", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Access-Control-Allow-Credentials", "true");
    res.set_header("Access-Control-Allow-Methods", "GET, POST");
    res.set_header("Access-Control-Allow-Headers", "*");
    res.set_content("", "text/plain");
  });
  for (const char* health : {"/health", "/v1/health"})
    http.Get(health, [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
  const auto models = [&s](const httplib::Request&, httplib::Response& res) {
    const ModelConfig& c = s.model.config();
    send_json(res, 200,
              {{"object", "list"},
               {"data", json::array({{{"id", s.options.model_name},
                                      {"object", "model"},
                                      {"created", unix_seconds()},
                                      {"owned_by", "momentkv"},
                                      {"meta", {{"n_ctx_train", c.context_length},
                                                {"n_ctx", s.n_ctx},
                                                {"n_vocab", c.n_vocab},
                                                {"kv_press", s.options.press.spec()}}}}})}});
  };
  for (const char* path : {"/v1/models", "/models"}) http.Get(path, models);  // llama-server answers both
  // llama-server's /props: what a request gets by default, the slots and the chat template.
  http.Get("/props", [&s](const httplib::Request&, httplib::Response& res) {
    const SamplerParams defaults;
    auto shortest = [](float x) { return std::stod(fmt::format("{}", x)); };  // 0.8, not 0.800000011920929
    send_json(res, 200,
              {{"default_generation_settings",
                {{"n_ctx", s.n_ctx},
                 {"params", {{"n_predict", -1},
                             {"temperature", shortest(defaults.temperature)},
                             {"top_k", defaults.top_k},
                             {"top_p", shortest(defaults.top_p)},
                             {"min_p", shortest(defaults.min_p)},
                             {"seed", -1},
                             {"stop", json::array()},
                             {"ignore_eos", false},
                             {"kv_press", s.options.press.spec()}}}}},
               {"total_slots", s.options.parallel},
               {"model_alias", s.options.model_name},
               {"model_path", s.options.model_path},
               // The --chat-template override's name, else the model's template text (may be empty).
               {"chat_template", s.options.chat_template.empty() ? s.tokenizer.vocab().chat_template : s.options.chat_template},
               {"modalities", {{"vision", false}, {"audio", false}}}});
  });
  // llama-server's /slots: per slot its id, context and whether a request holds it;
  // ?fail_on_no_slot=1 answers 503 when none is free (for a load balancer's health check).
  http.Get("/slots", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!s.options.slots_endpoint)
      throw ApiError(501, "not_supported_error", "This server does not support slots endpoint. Start it with `--slots`");
    const std::vector<bool> held = s.slots.held();
    if (req.get_param_value("fail_on_no_slot") == "1" && std::find(held.begin(), held.end(), false) == held.end())
      throw ApiError(503, "unavailable_error", "no slot available");
    json slots = json::array();
    for (std::size_t id = 0; id < held.size(); ++id)
      slots.push_back({{"id", id}, {"n_ctx", s.n_ctx}, {"is_processing", bool(held[id])}});
    send_json(res, 200, slots);
  });
  const std::size_t max_body = s.options.max_body_bytes;
  // The routes that read a body: the only ones a request may send one to (pre-routing above).
  const auto reading = [&s](const httplib::Request& req, bool started) {
    if (!s.header_deadline) return;
    if (started) s.header_deadline->body_started(req);
    else s.header_deadline->body_finished(req);
  };
  const auto post = [&](const char* path, BodyHandler handler) {
    s.body_paths.insert(path);
    http.Post(path, body_route(max_body, reading, std::move(handler)));
  };
  using Api = State::Api;
  post("/v1/completions", [&s](const httplib::Request& req, const std::string& body, httplib::Response& res) {
    s.completion(req, body, res, Api::Completions);
  });
  for (const char* chat : {"/v1/chat/completions", "/chat/completions"})  // llama-server answers both
    post(chat, [&s](const httplib::Request& req, const std::string& body, httplib::Response& res) {
      s.completion(req, body, res, Api::Chat);
    });
  for (const char* native : {"/completion", "/completions"})  // llama-server answers both
    post(native, [&s](const httplib::Request& req, const std::string& body, httplib::Response& res) {
      s.completion(req, body, res, Api::Native);
    });
  // llama-server's /apply-template: a chat request's prompt as the template renders it.
  post("/apply-template", [&s](const httplib::Request&, const std::string& body, httplib::Response& res) {
    const CompletionRequest r = parse_completion_request(body, /*chat=*/true, 0, s.tokenizer.n_vocab());
    send_json(res, 200, {{"prompt", s.chat_prompt(r)}});
  });
  post("/tokenize", [&s](const httplib::Request&, const std::string& text, httplib::Response& res) {
    const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || !body.contains("content") || !body["content"].is_string())
      throw ApiError(400, "invalid_request_error", "the body must be {\"content\": \"text\"}", "content");
    const auto flag = [&](const char* key) { return body.contains(key) && body[key].is_boolean() && body[key].get<bool>(); };
    const std::vector<int32_t> ids = s.tokenizer.encode(body["content"].get<std::string>(), flag("add_special"), true);
    if (!flag("with_pieces")) return send_json(res, 200, {{"tokens", ids}});
    // llama-server's with_pieces: each token's piece, a string when it is whole UTF-8, else its bytes.
    json tokens = json::array();
    for (const int32_t id : ids) {
      const std::string piece = s.tokenizer.token_to_piece(id, /*render_special=*/true);
      bool whole = true;
      for (std::size_t i = 0; i < piece.size() && whole;) {
        const std::size_t n = utf8_sequence_length(piece, i);
        whole = n > 0;
        i += n;
      }
      json bytes = json::array();
      if (!whole)
        for (const char c : piece) bytes.push_back(int(static_cast<unsigned char>(c)));
      tokens.push_back({{"id", id}, {"piece", whole ? json(piece) : bytes}});
    }
    send_json(res, 200, {{"tokens", tokens}});
  });
  post("/detokenize", [&s](const httplib::Request&, const std::string& text, httplib::Response& res) {
    const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array())
      throw ApiError(400, "invalid_request_error", "the body must be {\"tokens\": [ids]}", "tokens");
    send_json(res, 200, {{"content", s.tokenizer.decode(token_ids(body["tokens"], s.tokenizer.n_vocab(), "tokens", "tokens"))}});
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.options.metrics)
      throw ApiError(501, "not_supported_error", "This server does not support metrics endpoint. Start it with `--metrics`");
    res.set_content(s.metrics(), "text/plain; version=0.0.4");
  });
}

Server::~Server() = default;

int Server::bind() {
  const ServerOptions& o = state_->options;
  errno = 0;
  const int port = o.port == 0 ? http_->bind_to_any_port(o.host) : (http_->bind_to_port(o.host, o.port) ? o.port : -1);
  MKV_CHECK(port > 0 || errno != EADDRINUSE,
            "cannot listen on {}:{}: the port is already in use (another server listens there; --reuse-port shares "
            "a port on purpose)", o.host, o.port);
  MKV_CHECK(port > 0, "cannot listen on {}:{} (not an address of this machine, or the port is in use)", o.host, o.port);
  ::listen(static_cast<HttpServer&>(*http_).listening_socket(), SOMAXCONN);  // a larger backlog (see HttpServer)
  const auto farewell = [](const std::string& message) {  // a 408 reply with this message, then close
    const std::string body = dump(error_body(ApiError(408, "invalid_request_error", message)));
    return fmt::format("HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
                       "Connection: close\r\n\r\n{}",
                       body.size(), body);
  };
  state_->header_deadline = std::make_unique<HeaderDeadline>(
      port, std::chrono::seconds(o.header_timeout_seconds),
      farewell(fmt::format("the request's headers did not arrive within {} s", o.header_timeout_seconds)),
      std::chrono::seconds(o.body_timeout_seconds),
      farewell(fmt::format("the request's body did not arrive whole within {} s", o.body_timeout_seconds)));
  return port;
}

void Server::run() { http_->listen_after_bind(); }

void Server::stop() { http_->stop(); }

}  // namespace mkv::serve
