// Greedy generation for the benchmark runners (RULER, LongBench) through the engine's one loop
// (engine/generation.h): prefill (question compressed with the context, SnapKV's protocol) or
// prefill the context, compress, then feed the question uncompressed (kvpress's protocol); then
// greedy decode until an end-of-generation token, a stop string, max_new_tokens or the context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "engine/session.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace mkv::eval {

enum class Protocol { snapkv, kvpress };
Protocol parse_protocol(const std::string& text);  // "snapkv" | "kvpress"; MkvError otherwise
const char* protocol_name(Protocol protocol);

// One press setting of a run: the press with its budget (full: none), the press as the user gave
// it (no budget) for run records, the budget L (0 for full) and a label for folder names
// ("snapkv_L128", "full").
struct PressSetting {
  PressConfig press;
  std::string spec;
  int32_t budget = 0;
  std::string label;
};
// Every press × budget ("full" runs once, budget 0). MkvError for a press that carries a budget
// of its own (budgets come from the list).
std::vector<PressSetting> expand_press_settings(const std::vector<PressConfig>& presses,
                                                const std::vector<int32_t>& budgets);

struct GenerationRequest {
  std::vector<int32_t> context;   // compressed (BOS included when the model wants it)
  std::vector<int32_t> question;  // kvpress protocol: appended after compression; else empty
  int max_new_tokens = 128;
  std::vector<std::string> stop_strings;  // generation ends at the first occurrence (cut off)
};

// A fresh session (`session` with the setting's press; ubatch 0 or above the model's limit: the
// limit) and greedy generation; MkvError when the prompt does not fit the context.
mkv::GenerationResult generate_greedy(Transformer& model, const Tokenizer& tokenizer, const PressSetting& setting,
                                      const GenerationRequest& request, const SessionOptions& session);

}  // namespace mkv::eval
