// Chat templates: turn a conversation into the prompt text an instruct model was trained on.
//
// Rather than running the GGUF's Jinja `tokenizer.chat_template`, the template family is
// recognised from marker strings in it (as llama.cpp's llama_chat_apply_template does) and
// formatted natively:
//   llama3  "<|start_header_id|>" in the template. Each turn is
//           <|start_header_id|>{role}<|end_header_id|>\n\n{trimmed content}<|eot_id|>
//           (no leading "<|begin_of_text|>": the tokenizer adds BOS, as llama.cpp does).
//   chatml  "<|im_start|>" in the template (Qwen2/2.5). Each turn is
//           <|im_start|>{role}\n{content}<|im_end|>\n
//   qwen3   ChatML whose template also mentions "<think>" (Qwen3 hybrid thinking). Formats like
//           Qwen3's Jinja template: assistant turns after the last user query open with a think
//           block ("<think>\n{reasoning}\n</think>\n\n", reasoning taken from a "...</think>"
//           prefix of the content, empty otherwise), consecutive "tool" messages are wrapped in
//           one user turn of <tool_response> blocks, and with thinking disabled the generation
//           prompt ends with an empty think block.
// The generation prompt is the opening of an assistant turn.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace mkv {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (qwen3 also "tool")
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family { llama3, chatml, qwen3 };

  // How the CLI overrides the template; a front end with other words passes its own to detect().
  static constexpr std::string_view kCliOverrideHint = "pass --chat-template llama3|chatml|qwen3";

  // Recognises the family of a tokenizer.chat_template text; throws MkvError when it is empty or
  // unrecognised (the message ends with `override_hint`).
  static ChatTemplate detect(std::string_view template_text, std::string_view override_hint = kCliOverrideHint);
  // "llama3", "chatml" or "qwen3" (the --chat-template override); throws MkvError otherwise.
  static ChatTemplate by_name(std::string_view name);
  // by_name(override_name) when it is not empty, else detect(vocab.chat_template, override_hint).
  static ChatTemplate for_vocab(const Vocab& vocab, std::string_view override_name = {},
                                std::string_view override_hint = kCliOverrideHint);

  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  Family family() const { return family_; }
  std::string_view name() const;
  // Qwen3 only (default true): false appends "<think>\n\n</think>\n\n" to the generation prompt.
  void set_enable_thinking(bool enable) { enable_thinking_ = enable; }

 private:
  explicit ChatTemplate(Family family) : family_(family) {}
  std::string render_qwen3(const std::vector<ChatMessage>& messages,
                           bool add_generation_prompt) const;

  Family family_;
  bool enable_thinking_ = true;
};

}  // namespace mkv
