// libFuzzer target for the server's request parsing: a /v1/completions or /v1/chat/completions
// body must be parsed into a CompletionRequest or refused with ApiError (never another exception,
// never a crash), and what the server then does with a parsed request before the model runs must
// hold too: the request's press (ApiError or a config whose spec round-trips), the chat prompt of
// every template family, and the response bodies of a reply. Input: one byte of choices, then the
// body.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.h"
#include "fuzz/fuzz_input.h"
#include "serve/openai_api.h"

namespace {

using mkv::serve::ApiError;

void check_parsed(const mkv::serve::CompletionRequest& r, int n_vocab) {
  for (const int32_t id : r.prompt_ids)
    mkv::fuzz::require(id >= 0 && id < n_vocab, "a prompt id outside the vocabulary");
  mkv::fuzz::require(r.max_tokens >= -1, "max_tokens below -1");

  // The request's press against a server running the full cache, and one running SnapKV at L=64.
  for (const bool server_compresses : {false, true}) {
    // As `serve --press snapkv --kv-budget 64` holds them: the press with the flags' budget.
    const std::optional<mkv::Budget> server_budget =
        server_compresses ? mkv::PressConfig::budget_from_flags(64, std::nullopt) : std::nullopt;
    const mkv::PressConfig server_press =
        server_compresses ? mkv::PressConfig::parse("snapkv", server_budget) : mkv::PressConfig();
    try {
      const mkv::PressConfig press = mkv::serve::request_press(r, server_press);
      mkv::fuzz::require(mkv::PressConfig::parse(press.spec()) == press,
                         "a request's press spec does not round-trip");
      if (!press.is_full()) press.require_budget();
    } catch (const ApiError& e) {
      mkv::fuzz::require(e.status == 400, "a press error that is not a 400");
    }
  }

  if (r.chat)
    for (const char* family : {"llama3", "chatml", "qwen3"}) {
      mkv::ChatTemplate chat = mkv::ChatTemplate::by_name(family);
      (void)chat.render(r.messages, true);
      chat.set_enable_thinking(false);
      (void)chat.render(r.messages, false);
    }

  mkv::serve::CompletionOutcome outcome;
  outcome.text = r.chat ? "reply" : r.prompt.substr(0, 16);  // a piece that may end inside a character
  outcome.finish_reason = "stop";
  const mkv::serve::ResponseHeader header{"id", 0, "model", "momentkv-test"};
  (void)mkv::serve::completion_response(r, outcome, header).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)mkv::serve::stream_chunk(r, header, outcome.text, std::nullopt)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)mkv::serve::native_response(r, outcome, "model", outcome.text)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mkv::fuzz::FuzzInput in(data, size);
  const uint8_t choices = in.byte();
  const bool chat = choices & 1;
  const int n_vocab = (choices & 2) ? 128256 : 32;
  const std::string body(in.rest());
  try {
    const mkv::serve::CompletionRequest r = mkv::serve::parse_completion_request(body, chat, 7, n_vocab);
    mkv::fuzz::require(r.chat == chat, "the request kind changed");
    check_parsed(r, n_vocab);
  } catch (const ApiError& e) {
    mkv::fuzz::require(e.status == 400, "a parse error that is not a 400");
    (void)mkv::serve::error_body(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return 0;
}
