#include "engine/generation.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace mkv {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The reply's text as it grows, and how much of it the caller has been given.
class ReplyText {
 public:
  ReplyText(const Tokenizer* tokenizer, const GenerationParams& params)
      : tokenizer_(tokenizer), stops_(params.stop), strip_space_(params.reply_starts_text) {
    std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  }

  // Appends the token's piece; true when a stop string now occurs (the text is cut before it).
  bool push(int32_t token) {
    if (!tokenizer_) return false;
    std::string piece = tokenizer_->token_to_piece(token);
    const Vocab& vocab = tokenizer_->vocab();
    if (strip_space_ && vocab.add_space_prefix && vocab.types[token] != TokenType::CONTROL) {
      if (!piece.empty() && piece.front() == ' ') piece.erase(0, 1);
      strip_space_ = false;
    }
    text_ += piece;
    std::size_t cut = std::string::npos;
    for (const std::string& s : stops_)
      if (const std::size_t at = text_.find(s); at < cut) {
        cut = at;
        matched_ = s;
      }
    if (cut == std::string::npos) return false;
    text_.resize(cut);
    return true;
  }
  // The stop string that cut the text (the earliest), once push() returned true.
  const std::string& matched_stop() const { return matched_; }

  // Text that can no longer change: the end of the text that could start a stop string is held.
  std::string take_final() {
    std::size_t safe = text_.size();
    for (const std::string& s : stops_)
      for (std::size_t n = std::min(s.size() - 1, text_.size()); n > 0; --n)
        if (text_.compare(text_.size() - n, n, s, 0, n) == 0) {
          safe = std::min(safe, text_.size() - n);
          break;
        }
    return take_until(std::max(safe, given_));
  }
  std::string take_rest() { return take_until(text_.size()) + streamer_.flush(); }
  const std::string& text() const { return text_; }

 private:
  std::string take_until(std::size_t end) {
    std::string out = streamer_.push(std::string_view(text_).substr(given_, end - given_));
    given_ = end;
    return out;
  }

  const Tokenizer* tokenizer_;
  std::vector<std::string> stops_;
  bool strip_space_;
  std::string text_;         // the reply so far, cut at a stop string
  std::string matched_;      // the stop string it was cut at
  std::size_t given_ = 0;    // bytes of text_ passed to the streamer
  Utf8Streamer streamer_;    // holds back half UTF-8 characters
};

}  // namespace

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::EndOfGeneration: return "eos";
    case StopReason::StopString: return "stop";
    case StopReason::MaxTokens: return "length";
    case StopReason::ContextFull: return "context";
    case StopReason::Cancelled: return "cancelled";
  }
  return "?";
}

int32_t pick_greedy(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

GenerationResult generate(Session& session, const Tokenizer& tokenizer, const GenerationPrompt& prompt,
                          const GenerationParams& params, const GenerationCallbacks& callbacks) {
  const int64_t n_prompt = int64_t(prompt.compressed.size()) + int64_t(prompt.uncompressed.size());
  MKV_CHECK(!prompt.compressed.empty(), "the prompt is empty (no tokens to prefill)");
  MKV_CHECK(session.n_past() + n_prompt < session.n_ctx(),
            "prompt of {} tokens does not fit the context of {} ({} already held; raise -c)", n_prompt,
            session.n_ctx(), session.n_past());
  const auto start = Clock::now();
  const int32_t n_past_before = session.n_past();
  std::vector<float> logits;  // (n_vocab) predicting the first reply token
  {
    const std::span<const float> l = session.prefill(prompt.compressed, callbacks.keep_going);  // compresses after it
    if (l.empty()) {  // cancelled between chunks
      GenerationResult cancelled;
      cancelled.stop = StopReason::Cancelled;
      cancelled.prompt_tokens = session.n_past() - n_past_before;  // the chunks fed
      cancelled.prefill_seconds = seconds_since(start);
      return cancelled;
    }
    logits.assign(l.begin(), l.end());
  }
  if (!prompt.uncompressed.empty()) {
    const std::size_t n_vocab = logits.size();
    std::vector<float> all(prompt.uncompressed.size() * n_vocab);  // (n, n_vocab)
    session.evaluate(prompt.uncompressed, all.data());
    logits.assign(all.end() - static_cast<std::ptrdiff_t>(n_vocab), all.end());
  }
  const double prefill_seconds = seconds_since(start);
  if (callbacks.on_prompt) callbacks.on_prompt();
  GenerationResult result = continue_generation(session, &tokenizer, logits, params, callbacks);
  result.prompt_tokens = static_cast<int32_t>(n_prompt);
  result.prefill_seconds = prefill_seconds;
  return result;
}

GenerationResult continue_generation(Session& session, const Tokenizer* tokenizer, std::span<const float> logits,
                                     const GenerationParams& params, const GenerationCallbacks& callbacks) {
  MKV_CHECK(callbacks.pick != nullptr, "generation needs a token picker");
  MKV_CHECK(params.max_new_tokens >= -1, "max_new_tokens must be -1 (unlimited) or >= 0, got {}",
            params.max_new_tokens);
  const auto start = Clock::now();
  GenerationResult result;
  ReplyText reply(tokenizer, params);
  auto give = [&](std::string text) { return text.empty() || !callbacks.on_text || callbacks.on_text(text); };
  while (true) {
    if (params.max_new_tokens >= 0 && int(result.tokens.size()) >= params.max_new_tokens) {
      result.stop = StopReason::MaxTokens;
      break;
    }
    const int32_t next = callbacks.pick(logits);
    if (tokenizer && !params.ignore_eos && tokenizer->is_end_of_generation(next)) {
      result.stop = StopReason::EndOfGeneration;
      break;
    }
    result.tokens.push_back(next);
    if (reply.push(next)) {
      result.stop = StopReason::StopString;
      result.stop_string = reply.matched_stop();
      break;
    }
    if (!give(reply.take_final())) {
      result.stop = StopReason::Cancelled;
      break;
    }
    const bool last = params.max_new_tokens >= 0 && int(result.tokens.size()) >= params.max_new_tokens;
    if (last && !params.feed_last_token) {
      result.stop = StopReason::MaxTokens;
      break;
    }
    if (session.n_past() >= session.n_ctx()) {
      result.stop = StopReason::ContextFull;
      break;
    }
    logits = session.decode(next);
    if (callbacks.on_decode) callbacks.on_decode();
  }
  if (result.stop != StopReason::Cancelled) give(reply.take_rest());
  result.text = reply.text();
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace mkv
