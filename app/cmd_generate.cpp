// momentkv generate: streams a continuation of a prompt, llama.cpp style.
#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "engine/generation.h"
#include "text/chat_template.h"
#include "text/sampler.h"

namespace mkv::cli {
namespace {

std::string read_prompt(const GenerateOptions& o) {
  MKV_CHECK(o.prompt.empty() || o.prompt_file.empty(), "give either -p or -f, not both");
  if (o.prompt_file.empty()) return o.prompt;
  return read_text_file(o.prompt_file, "prompt file (-f)");
}

// Streams the reply to stdout as it becomes final; the token count adds up across chat turns.
struct ReplyStream {
  const GenerateOptions& options;
  Sampler& sampler;
  int n_generated = 0;

  GenerationResult run(Session& session, const Tokenizer& tok, std::span<const int32_t> prompt,
                       std::function<void()> on_prompt = {}) {
    GenerationParams params;
    params.max_new_tokens = options.n_predict;
    params.ignore_eos = options.ignore_eos;
    GenerationCallbacks callbacks;
    callbacks.on_prompt = std::move(on_prompt);
    callbacks.pick = [this](std::span<const float> logits) { return sampler.sample(logits); };
    callbacks.on_text = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    };
    GenerationResult result = generate(session, tok, {prompt, {}}, params, callbacks);
    std::fputc('\n', stdout);
    n_generated += int(result.tokens.size());
    return result;
  }
};

// Chat turns: from -p (one turn) or one per stdin line. Each turn feeds only the part of the
// rendered conversation that is new, as llama.cpp's conversation mode does.
int run_conversation(const GenerateOptions& o, LoadedModel& m, Session& session, ReplyStream& stream) {
  const Tokenizer& tok = *m.tokenizer;
  const ChatTemplate chat = ChatTemplate::for_vocab(tok.vocab(), o.chat_template);
  std::vector<ChatMessage> messages;
  if (!o.system_prompt.empty()) messages.push_back({"system", o.system_prompt});
  std::string rendered;  // the conversation as fed so far
  auto turn = [&](const std::string& user) {
    messages.push_back({"user", user});
    const std::string full = chat.render(messages, /*add_generation_prompt=*/true);
    const std::string fresh = full.substr(std::min(rendered.size(), full.size()));
    const bool first = rendered.empty();
    std::vector<int32_t> tokens = tok.encode(fresh, /*add_special=*/first && !fresh.starts_with(tok.token_to_piece(tok.vocab().bos, true)), /*parse_special=*/true);
    messages.push_back({"assistant", stream.run(session, tok, tokens).text});
    rendered = chat.render(messages, /*add_generation_prompt=*/false);
  };
  if (!o.prompt.empty()) {
    turn(o.prompt);
  } else {
    std::string line;
    while (std::fputs("> ", stderr), std::getline(std::cin, line))
      if (!line.empty()) turn(line);
  }
  fmt::print(stderr, "{} tokens generated; kv cache: {} bytes held\n", stream.n_generated, session.cache().bytes_held());
  return 0;
}

}  // namespace

int run_generate(const GenerateOptions& o) {
  MKV_CHECK(o.n_predict >= -1, "-n must be -1 (unlimited) or >= 0, got {}", o.n_predict);
  const std::string prompt = read_prompt(o);
  LoadedModel m = load_model(o.model);
  const Tokenizer& tok = *m.tokenizer;

  SamplerParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.min_p = o.min_p;
  sp.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  Sampler sampler(sp);

  const std::unique_ptr<Press> press = o.press.make_or_null();
  if (press) fmt::print(stderr, "press: {}\n", press->spec());
  SessionOptions so = session_options(o.model, m, o.compress_each_chunk);
  so.press = press.get();
  Session session(*m.transformer, so);
  ReplyStream stream{o, sampler};
  if (o.conversation) {
    GenerateOptions chat_options = o;
    chat_options.prompt = prompt;
    return run_conversation(chat_options, m, session, stream);
  }

  std::vector<int32_t> tokens = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  MKV_CHECK(!tokens.empty(), "the prompt is empty and the model adds no BOS token; give -p TEXT");
  // Checked before the prompt is echoed, so that a failed run prints only its error.
  MKV_CHECK(std::ssize(tokens) < session.n_ctx(), "prompt of {} tokens does not fit the context of {} (raise -c)",
            tokens.size(), session.n_ctx());
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  const KvCache& cache = session.cache();
  std::string after_prompt;  // what the press left of the prompt, against the uncompressed cache
  const GenerationResult result = stream.run(session, tok, tokens, [&] {
    after_prompt = fmt::format("kv cache after the prompt: {} bytes held ({} rows over all layers and KV heads, {} "
                               "bytes of moment statistics); uncompressed: {} bytes\n",
                               cache.bytes_held(), cache.total_tokens(), cache.moment_bytes(),
                               cache.uncompressed_bytes(session.n_past()));
  });
  fmt::print(stderr, "\nprompt: {} tokens in {:.3f} s ({:.1f} tok/s)\n", tokens.size(), result.prefill_seconds,
             tokens.size() / std::max(result.prefill_seconds, 1e-9));
  fmt::print(stderr, "decode: {} tokens in {:.3f} s ({:.1f} tok/s), stopped by {}\n", stream.n_generated,
             result.decode_seconds, stream.n_generated / std::max(result.decode_seconds, 1e-9),
             stop_reason_name(result.stop));
  fmt::print(stderr, "{}kv cache at the end: {} bytes held ({} rows); uncompressed: {} bytes\n", after_prompt,
             cache.bytes_held(), cache.total_tokens(), cache.uncompressed_bytes(session.n_past()));
  return 0;
}

}  // namespace mkv::cli
