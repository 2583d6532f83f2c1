// momentkv generate: streams a continuation of a prompt, llama.cpp style.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "commands.h"
#include "core/error.h"
#include "engine/session.h"
#include "kv/press_registry.h"
#include "model/chat_template.h"
#include "model/sampler.h"

namespace mkv::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_prompt(const GenerateOptions& o) {
  MKV_CHECK(o.prompt.empty() || o.prompt_file.empty(), "give either -p or -f, not both");
  if (o.prompt_file.empty()) return o.prompt;
  std::ifstream in(o.prompt_file, std::ios::binary);
  MKV_CHECK(in.good(), "cannot read prompt file '{}'", o.prompt_file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Samples and streams tokens after `logits` until end of generation, -n or the context is full.
// Returns the generated text (end-of-generation token excluded).
std::string stream_reply(Session& session, Sampler& sampler, const Tokenizer& tok, std::span<const float> logits,
                         const GenerateOptions& o, int& n_generated) {
  Utf8Streamer streamer;
  std::string reply;
  int n = 0;
  while (o.n_predict < 0 || n < o.n_predict) {
    const int32_t next = sampler.sample(logits);
    ++n;
    if (!o.ignore_eos && tok.is_end_of_generation(next)) break;
    const std::string text = streamer.push(tok.token_to_piece(next));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    reply += text;
    if (session.n_past() >= session.n_ctx()) break;
    logits = session.decode(next);
  }
  const std::string rest = streamer.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  n_generated += n;
  return reply + rest;
}

std::unique_ptr<Press> make_generate_press(const GenerateOptions& o) {
  MKV_CHECK(o.kv_budget >= 0, "--kv-budget must be >= 0, got {}", o.kv_budget);
  MKV_CHECK(o.compression_ratio >= 0 && o.compression_ratio < 1, "--compression-ratio must be in [0, 1), got {}",
            o.compression_ratio);
  MKV_CHECK(!(o.kv_budget > 0 && o.compression_ratio > 0), "give --kv-budget or --compression-ratio, not both");
  if (o.press == "full") return nullptr;
  auto press = make_press(o.press, Budget{o.kv_budget, o.compression_ratio});
  fmt::print(stderr, "press: {}\n", press->spec());
  return press;
}

// Chat turns: from -p (one turn) or one per stdin line. Each turn feeds only the part of the
// rendered conversation that is new, as llama.cpp's conversation mode does.
int run_conversation(const GenerateOptions& o, LoadedModel& m, Session& session, Sampler& sampler) {
  const Tokenizer& tok = *m.tokenizer;
  const ChatTemplate chat = ChatTemplate::for_vocab(tok.vocab(), o.chat_template);
  std::vector<ChatMessage> messages;
  if (!o.system_prompt.empty()) messages.push_back({"system", o.system_prompt});
  std::string rendered;  // the conversation as fed so far
  int n_generated = 0;
  auto turn = [&](const std::string& user) {
    messages.push_back({"user", user});
    const std::string full = chat.render(messages, /*add_generation_prompt=*/true);
    const std::string fresh = full.substr(std::min(rendered.size(), full.size()));
    const bool first = rendered.empty();
    std::vector<int32_t> tokens = tok.encode(fresh, /*add_special=*/first && !fresh.starts_with(tok.token_to_piece(tok.vocab().bos, true)), /*parse_special=*/true);
    const std::string reply = stream_reply(session, sampler, tok, session.prefill(tokens), o, n_generated);
    messages.push_back({"assistant", reply});
    rendered = chat.render(messages, /*add_generation_prompt=*/false);
  };
  if (!o.prompt.empty()) {
    turn(o.prompt);
  } else {
    std::string line;
    while (std::fputs("> ", stderr), std::getline(std::cin, line))
      if (!line.empty()) turn(line);
  }
  fmt::print(stderr, "{} tokens generated; kv cache: {} bytes held\n", n_generated, session.cache().bytes_held());
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

  std::unique_ptr<Press> press = make_generate_press(o);
  SessionOptions so;
  so.ubatch = o.model.ubatch;
  so.n_ctx = o.model.ctx;
  so.kv_storage = m.kv_storage;
  so.press = press.get();
  so.compress_each_chunk = o.compress_each_chunk;
  Session session(*m.transformer, so);
  if (o.conversation) {
    GenerateOptions chat_options = o;
    chat_options.prompt = prompt;
    return run_conversation(chat_options, m, session, sampler);
  }

  std::vector<int32_t> tokens = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  MKV_CHECK(!tokens.empty(), "the prompt is empty and the model adds no BOS token; give -p TEXT");
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  const auto prefill_start = Clock::now();
  std::span<const float> logits = session.prefill(tokens);
  const double prefill_s = seconds_since(prefill_start);
  const KvCache& cache = session.cache();
  // What the prompt would hold uncompressed, and what the press left of it.
  const int64_t full_bytes =
      int64_t{session.n_past()} * cache.shape().n_layers * cache.shape().n_kv_heads * int64_t(cache.row_bytes());
  const std::string cache_after_prefill =
      fmt::format("kv cache after prefill: {} bytes held ({} rows over all layers and KV heads, {} bytes of moment "
                  "statistics); uncompressed: {} bytes\n",
                  cache.bytes_held(), cache.total_tokens(), cache.moment_bytes(), full_bytes);

  int n_generated = 0;
  const auto decode_start = Clock::now();
  stream_reply(session, sampler, tok, logits, o, n_generated);
  const double decode_s = seconds_since(decode_start);

  fmt::print(stderr, "\nprompt: {} tokens in {:.3f} s ({:.1f} tok/s)\n", tokens.size(), prefill_s,
             tokens.size() / prefill_s);
  fmt::print(stderr, "decode: {} tokens in {:.3f} s ({:.1f} tok/s)\n", n_generated, decode_s,
             n_generated / std::max(decode_s, 1e-9));
  fmt::print(stderr, "{}kv cache at the end: {} bytes held ({} rows)\n", cache_after_prefill, cache.bytes_held(),
             cache.total_tokens());
  return 0;
}

}  // namespace mkv::cli
