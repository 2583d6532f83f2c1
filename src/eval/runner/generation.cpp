#include "eval/runner/generation.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/error.h"
#include "engine/session.h"

namespace mkv::eval {

Protocol parse_protocol(const std::string& text) {
  if (text == "snapkv") return Protocol::snapkv;
  if (text == "kvpress") return Protocol::kvpress;
  fail("--protocol must be snapkv or kvpress, got '{}'", text);
}

const char* protocol_name(Protocol protocol) { return protocol == Protocol::snapkv ? "snapkv" : "kvpress"; }

std::vector<PressSetting> expand_press_settings(const std::vector<PressConfig>& presses,
                                                const std::vector<int32_t>& budgets) {
  std::vector<PressSetting> out;
  for (const PressConfig& press : presses) {
    const std::string spec = press.as_given();
    if (press.is_full()) {
      out.push_back({press, spec, 0, "full"});
      continue;
    }
    press.require_budget_from_list();
    std::string tag = spec;
    std::replace_if(tag.begin(), tag.end(), [](char c) { return !(std::isalnum(uint8_t(c)) || c == '_' || c == '-' || c == '.'); }, '_');
    for (int32_t b : budgets) out.push_back({press.with_budget(Budget{b, 0.0}), spec, b, tag + "_L" + std::to_string(b)});
  }
  return out;
}

mkv::GenerationResult generate_greedy(Transformer& model, const Tokenizer& tokenizer, const PressSetting& setting,
                                      const GenerationRequest& request, const SessionOptions& options) {
  const std::unique_ptr<Press> press = setting.press.make_or_null();
  SessionOptions so = options;
  so.ubatch = std::min(options.ubatch > 0 ? options.ubatch : model.max_batch(), model.max_batch());
  so.press = press.get();
  Session session(model, so);
  GenerationParams params;
  params.max_new_tokens = request.max_new_tokens;
  params.stop = request.stop_strings;
  params.reply_starts_text = true;
  GenerationCallbacks callbacks;
  callbacks.pick = pick_greedy;
  return generate(session, tokenizer, {request.context, request.question}, params, callbacks);
}

}  // namespace mkv::eval
