// The OpenAI-compatible request and response shapes of `momentkv serve` (llama-server's habits):
// a request body parsed and validated into a CompletionRequest, errors as OpenAI's error body, and
// the completion / chat completion responses and stream chunks. Pure functions: no HTTP here.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv/press_config.h"
#include "text/chat_template.h"
#include "text/sampler.h"

namespace mkv::serve {

// A request the server refuses: HTTP status, OpenAI error type and the offending field.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = "")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)) {}
  int status;
  std::string type;   // invalid_request_error, authentication_error, not_found_error, ...
  std::string param;  // the request field at fault; empty when none
  nlohmann::json extra = nlohmann::json::object();  // more fields of the error object (llama-server's)
};

// {"error": {"message", "type", "param", "code", ...extra}} (param null when empty).
nlohmann::json error_body(const ApiError& error);

// A request's JSON value as an error message shows it: a number, true, false or null as written; a
// string, array or object by its type only ("an array"), since it may be megabytes long or nested
// too deep to print.
std::string shown(const nlohmann::json& value);

// The token ids of a JSON array, each checked to be an id in [0, n_vocab); ApiError 400 naming the
// first element that is not (as `where`[i], with `param` as the error's field).
std::vector<int32_t> token_ids(const nlohmann::json& array, int n_vocab, const std::string& where,
                               const std::string& param);

struct CompletionRequest {
  bool chat = false;
  bool native = false;                 // POST /completion: llama-server's own response shapes
  std::string prompt;                  // /v1/completions
  std::vector<int32_t> prompt_ids;     // /v1/completions given token ids (fed as they are), else empty
  std::vector<ChatMessage> messages;   // /v1/chat/completions
  int max_tokens = -1;                 // max_tokens / n_predict; -1 = until end of generation or context
  SamplerParams sampling;              // llama-server's defaults; seed random unless given (-1: random)
  std::vector<std::string> stop;       // stop strings
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
  int logprobs = -1;                   // -1: none; else each reply token's log-probability and this many
                                       // most probable alternatives (completions' logprobs: N, chat's
                                       // logprobs + top_logprobs, /completion's n_probs)
  // logit_bias entries whose token is given as text (llama-server's): each of the text's tokens
  // gets the bias (resolve_logit_bias); those given as ids are in sampling.logit_bias.
  std::vector<std::pair<std::string, float>> logit_bias_text;
  std::string model;                   // echoed back ("" = the server's model name)
  // Compression extensions; absent = the server's --press / --kv-budget / --compression-ratio.
  std::optional<std::string> kv_press;
  std::optional<int64_t> kv_budget;
  std::optional<double> kv_compression_ratio;
};

// Parses a /v1/completions (chat = false) or /v1/chat/completions body. ApiError 400 naming the
// field for malformed JSON, a wrong type, an out-of-range value or an unsupported option (n > 1).
// A null field counts as absent. `random_seed` is used when the request gives no seed or seed -1.
// A completion's prompt is a string, an array of one string, or token ids (an array of them, or
// an array holding one such array, as OpenAI's batch of one), each below n_vocab.
CompletionRequest parse_completion_request(const std::string& body, bool chat, uint64_t random_seed, int n_vocab);

// Moves the request's text logit biases into sampling.logit_bias, `tokenize` giving each text's
// tokens (encoded without special tokens, as llama-server does).
// ApiError 400 when the biases ban every one of the n_vocab tokens.
void resolve_logit_bias(CompletionRequest& request, int n_vocab,
                        const std::function<std::vector<int32_t>(const std::string&)>& tokenize);

// The request's press: its kv_press spec (else the server's), with its kv_budget /
// kv_compression_ratio (else the spec's budget, else the server press's budget). ApiError 400
// naming kv_press / kv_budget / kv_compression_ratio when invalid.
PressConfig request_press(const CompletionRequest& request, const PressConfig& server_press);

// One reply token's log-probability under the model (the log-softmax of its logits at temperature
// 1, before any sampler truncation), with the most probable tokens at that step.
struct TokenLogprob {
  struct Alternative {
    int32_t id = 0;
    std::string piece;  // its text (bytes as the tokenizer gives them)
    float logprob = 0;
  };
  Alternative chosen;
  std::vector<Alternative> top;  // most probable first
};
TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_n,
                           const std::function<std::string(int32_t)>& piece);

// What a finished generation reports, for the response bodies.
struct CompletionOutcome {
  std::string text;
  std::string finish_reason;  // "stop" | "length"
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t kv_bytes_held = 0;   // after the prompt was compressed
  int64_t kv_bytes_full = 0;   // the same prompt uncompressed
  std::string press;           // canonical spec, "full" without compression
  bool cancelled = false;      // stopped because the client left
  std::string stop_type;       // llama-server's: "eos" | "word" (a stop string) | "limit" (max_tokens, context)
  std::string stopping_word;   // the stop string, for "word"
  double prompt_seconds = 0;   // reading the prompt (its compression included)
  double decode_seconds = 0;   // generating the reply
  std::vector<TokenLogprob> logprobs;  // per reply token, when the request asked (its text's tokens:
                                       // none past a stop string's cut)
};

nlohmann::json usage_json(const CompletionOutcome& outcome);
// llama-server's "timings": prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second and the
// same four for predicted_*.
nlohmann::json timings_json(const CompletionOutcome& outcome);
// The OpenAI fields every response and stream chunk carries: id, object, created, model and
// system_fingerprint (the build).
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
  std::string system_fingerprint;
};

// A complete (non-streamed) response: "text_completion" or "chat.completion".
nlohmann::json completion_response(const CompletionRequest& request, const CompletionOutcome& outcome,
                                   const ResponseHeader& header);
// OpenAI's logprobs of these reply tokens: a completion's {tokens, token_logprobs, top_logprobs
// (null when no alternatives were asked), text_offset (from first_offset: the reply's bytes
// before them)}, a chat reply's {content: [{token, logprob, bytes, top_logprobs}]}.
nlohmann::json openai_logprobs(const CompletionRequest& request, std::span<const TokenLogprob> logprobs,
                               std::size_t first_offset = 0);
// llama-server's completion_probabilities: [{id, token, logprob, bytes, top_logprobs: [{id, token,
// logprob, bytes}]}].
nlohmann::json native_probabilities(std::span<const TokenLogprob> logprobs);
// POST /completion's response (llama-server's native shape): content, stop, stop_type,
// stopping_word, tokens_predicted, tokens_evaluated, timings, and usage's KV fields. `content`
// is the reply, or "" as the last event of a stream.
nlohmann::json native_response(const CompletionRequest& request, const CompletionOutcome& outcome,
                               const std::string& model, const std::string& content);
// One event of a POST /completion stream before its last: {"index": 0, "content": text, "stop": false},
// with the completion_probabilities of its tokens when the request asked (n_probs).
nlohmann::json native_stream_piece(const CompletionRequest& request, const std::string& text,
                                   std::span<const TokenLogprob> logprobs);
// One stream chunk: a text delta (finish_reason null), or the final chunk (finish_reason set,
// empty delta). `logprobs`: the chunk's choice.logprobs (openai_logprobs of its tokens), null when
// the request asked none.
nlohmann::json stream_chunk(const CompletionRequest& request, const ResponseHeader& header, const std::string& text,
                            const std::optional<std::string>& finish_reason, const nlohmann::json& logprobs = nullptr);
// A chat stream's first chunk, before any text: the delta {"role": "assistant", "content": null}
// (llama-server's and OpenAI's).
nlohmann::json stream_role_chunk(const ResponseHeader& header);

}  // namespace mkv::serve
