// The one generation loop, used by every caller (generate, chat, eval, bench): prefill a prompt
// into a Session (its press compresses after the prefill), optionally feed a part that is not
// compressed (kvpress's protocol: the question after the compressed context), then pick and
// decode tokens until end of generation, a stop string, max_new_tokens, the context limit or a
// cancel from the caller, streaming the reply's text as it becomes final.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/session.h"
#include "text/tokenizer.h"

namespace mkv {

// Picks the next token from the logits (n_vocab): a Sampler, argmax, or a benchmark's random ids.
using TokenPicker = std::function<int32_t(std::span<const float> logits)>;

struct GenerationParams {
  int max_new_tokens = -1;         // -1: until end of generation or the context is full
  bool ignore_eos = false;         // keep going past end-of-generation tokens
  std::vector<std::string> stop;   // stop strings: the reply ends before the first occurrence
  bool reply_starts_text = false;  // the reply is a text of its own: SentencePiece's prefix space
                                   // is dropped from its first piece (as Tokenizer::decode does)
  bool feed_last_token = false;    // also decode the last token (a benchmark's tgN decodes N)
};

struct GenerationCallbacks {
  TokenPicker pick;                                // required
  std::function<bool(std::string_view)> on_text;  // reply text once final (no half UTF-8
                                                   // character, no possible stop-string prefix);
                                                   // returning false cancels
  std::function<bool()> keep_going;                // asked between prefill chunks; false cancels
  std::function<void()> on_prompt;                 // after the prompt is fed and compressed
  std::function<void()> on_decode;                 // after every decode step
};

enum class StopReason { EndOfGeneration, StopString, MaxTokens, ContextFull, Cancelled };
const char* stop_reason_name(StopReason reason);  // "eos", "stop", "length", "context", "cancelled"

struct GenerationResult {
  std::string text;               // the reply (stop string and end-of-generation token excluded)
  std::vector<int32_t> tokens;    // generated ids, end-of-generation token excluded
  int32_t prompt_tokens = 0;      // tokens fed before the first pick (cancelled in the prefill: fed so far)
  StopReason stop = StopReason::MaxTokens;
  std::string stop_string;        // the stop string that ended the reply (StopReason::StopString)
  double prefill_seconds = 0.0;   // prompt (compression pass included)
  double decode_seconds = 0.0;    // picking and decoding the reply
};

struct GenerationPrompt {
  std::span<const int32_t> compressed;    // prefilled after what the session holds; compressed
  std::span<const int32_t> uncompressed;  // fed after the compression, not compressed
};

// Feeds `prompt` into `session` and generates. MkvError when the prompt is empty or does not
// fit the session's context.
GenerationResult generate(Session& session, const Tokenizer& tokenizer, const GenerationPrompt& prompt,
                          const GenerationParams& params, const GenerationCallbacks& callbacks);

// The decoding half of generate(): picks from `logits` onwards. `tokenizer` may be null (no
// text, no end-of-generation check: benchmarks).
GenerationResult continue_generation(Session& session, const Tokenizer* tokenizer, std::span<const float> logits,
                                     const GenerationParams& params, const GenerationCallbacks& callbacks);

// Argmax, the lowest id on ties (greedy decoding).
int32_t pick_greedy(std::span<const float> logits);

}  // namespace mkv
