#include "eval/runner/generation.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/error.h"
#include "engine/session.h"
#include "kv/press_registry.h"

namespace mkv::eval {

Protocol parse_protocol(const std::string& text) {
  if (text == "snapkv") return Protocol::snapkv;
  if (text == "kvpress") return Protocol::kvpress;
  fail("--protocol must be snapkv or kvpress, got '{}'", text);
}

const char* protocol_name(Protocol protocol) { return protocol == Protocol::snapkv ? "snapkv" : "kvpress"; }

std::unique_ptr<Press> PressSetting::make() const {
  return budget > 0 ? make_press(spec, Budget{budget, 0.0}) : make_press(spec);
}

std::vector<PressSetting> expand_press_settings(const std::vector<std::string>& presses,
                                                const std::vector<int32_t>& budgets) {
  std::vector<PressSetting> out;
  for (const std::string& spec : presses) {
    const std::string name = spec.substr(0, spec.find(':'));
    std::string tag = spec;
    std::replace_if(tag.begin(), tag.end(), [](char c) { return !(std::isalnum(uint8_t(c)) || c == '_' || c == '-' || c == '.'); }, '_');
    if (name == "full") {
      PressSetting s{spec, 0, "full", name};
      s.make();  // validates
      out.push_back(std::move(s));
      continue;
    }
    MKV_CHECK(spec.find("budget=") == std::string::npos && spec.find("ratio=") == std::string::npos,
              "--press '{}': give budgets with --budgets, not in the spec", spec);
    for (int32_t b : budgets) {
      PressSetting s{spec, b, tag + "_L" + std::to_string(b), name};
      s.make();
      out.push_back(std::move(s));
    }
  }
  return out;
}

GenerationResult generate_greedy(Transformer& model, const Tokenizer& tokenizer, Press* press,
                                 const GenerationRequest& request, const GeneratorOptions& options) {
  MKV_CHECK(!request.context.empty(), "empty prompt");
  SessionOptions so;
  so.ubatch = std::min(options.ubatch > 0 ? options.ubatch : model.max_batch(), model.max_batch());
  so.n_ctx = options.n_ctx;
  so.kv_storage = options.kv_storage;
  so.press = press;
  so.compress_each_chunk = options.compress_each_chunk;
  Session session(model, so);
  GenerationResult result;
  result.prompt_tokens = static_cast<int32_t>(request.context.size() + request.question.size());
  MKV_CHECK(result.prompt_tokens < session.n_ctx(), "prompt of {} tokens does not fit the context of {} (raise -c)",
            result.prompt_tokens, session.n_ctx());
  const int n_vocab = model.config().n_vocab;
  std::vector<float> logits;
  {
    auto l = session.prefill(request.context);  // compresses after the prefill
    logits.assign(l.begin(), l.end());
  }
  if (!request.question.empty()) {
    // kvpress protocol: the question is fed after compression and is not compressed itself.
    std::vector<float> all(request.question.size() * static_cast<std::size_t>(n_vocab));
    session.evaluate(request.question, all.data());
    logits.assign(all.end() - n_vocab, all.end());
  }
  std::vector<int32_t> generated;
  std::string text;
  for (int step = 0; step < request.max_new_tokens; ++step) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (tokenizer.is_end_of_generation(next)) break;
    generated.push_back(next);
    text = tokenizer.decode(generated);
    bool stop = false;
    for (const std::string& s : request.stop_strings) {
      const auto at = text.find(s);
      if (!s.empty() && at != std::string::npos) {
        text.resize(at);
        stop = true;
      }
    }
    if (stop) break;
    if (step + 1 == request.max_new_tokens) break;
    if (session.n_past() >= session.n_ctx()) {
      result.hit_context_limit = true;
      break;
    }
    auto l = session.decode(next);
    logits.assign(l.begin(), l.end());
  }
  result.text = text;
  result.new_tokens = static_cast<int32_t>(generated.size());
  return result;
}

}  // namespace mkv::eval
