// Greedy generation over a Session with a press, shared by the benchmark runners (RULER,
// LongBench): prefill (question compressed with the context, SnapKV's protocol) or prefill the
// context, compress, then feed the question uncompressed (kvpress's protocol); then greedy decode
// until an end-of-generation token, a stop string, max_new_tokens or the context limit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/press.h"
#include "model/tokenizer.h"
#include "model/transformer.h"

namespace mkv::eval {

enum class Protocol { snapkv, kvpress };
Protocol parse_protocol(const std::string& text);  // "snapkv" | "kvpress"; MkvError otherwise
const char* protocol_name(Protocol protocol);

// One press setting of a run: spec as given (no budget), budget L (0 = the press's default /
// full cache), and a short label for folder names ("snapkv_L128", "full").
struct PressSetting {
  std::string spec;
  int32_t budget = 0;
  std::string label;
  std::string name;  // press name
  std::unique_ptr<Press> make() const;
};
// Every press × budget ("full" runs once, budget 0). MkvError naming a bad spec.
std::vector<PressSetting> expand_press_settings(const std::vector<std::string>& presses,
                                                const std::vector<int32_t>& budgets);

struct GenerationRequest {
  std::vector<int32_t> context;   // compressed (BOS included when the model wants it)
  std::vector<int32_t> question;  // kvpress protocol: appended after compression; else empty
  int max_new_tokens = 128;
  std::vector<std::string> stop_strings;  // generation ends at the first occurrence (cut off)
};

struct GenerationResult {
  std::string text;               // decoded new tokens (stop string removed)
  int32_t new_tokens = 0;
  int32_t prompt_tokens = 0;
  bool hit_context_limit = false;
};

struct GeneratorOptions {
  int ubatch = 512;
  int n_ctx = 0;
  KvStorage kv_storage = KvStorage::F32;
  bool compress_each_chunk = false;
};

GenerationResult generate_greedy(Transformer& model, const Tokenizer& tokenizer, Press* press,
                                 const GenerationRequest& request, const GeneratorOptions& options);

}  // namespace mkv::eval
