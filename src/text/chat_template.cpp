#include "text/chat_template.h"

#include "core/error.h"

namespace mkv {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Python's str.strip/lstrip/rstrip with a character set.
std::string_view lstrip(std::string_view text, std::string_view chars) {
  const std::size_t start = text.find_first_not_of(chars);
  return start == std::string_view::npos ? std::string_view() : text.substr(start);
}
std::string_view rstrip(std::string_view text, std::string_view chars) {
  const std::size_t end = text.find_last_not_of(chars);
  return end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1);
}
std::string_view strip(std::string_view text, std::string_view chars) {
  return lstrip(rstrip(text, chars), chars);
}
constexpr std::string_view kWhitespace = " \t\n\v\f\r";

// A user message that only carries tool output does not count as the user's query.
bool is_tool_response(const ChatMessage& message) {
  const std::string_view content = message.content;
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

}  // namespace

ChatTemplate ChatTemplate::detect(std::string_view template_text, std::string_view override_hint) {
  MKV_CHECK(!template_text.empty(),
            "the model has no chat template (tokenizer.chat_template is missing or empty); {}",
            override_hint);
  if (contains(template_text, "<|im_start|>"))
    return ChatTemplate(contains(template_text, "<think>") ? Family::qwen3 : Family::chatml);
  if (contains(template_text, "<|start_header_id|>")) return ChatTemplate(Family::llama3);
  fail(
      "unrecognised chat template (tokenizer.chat_template has neither Llama-3's "
      "'<|start_header_id|>' nor ChatML's '<|im_start|>'; it starts with '{}'); {}",
      template_text.substr(0, 60), override_hint);
}

ChatTemplate ChatTemplate::by_name(std::string_view name) {
  if (name == "llama3") return ChatTemplate(Family::llama3);
  if (name == "chatml") return ChatTemplate(Family::chatml);
  if (name == "qwen3") return ChatTemplate(Family::qwen3);
  fail("unknown chat template '{}' (expected llama3, chatml or qwen3)", name);
}

ChatTemplate ChatTemplate::for_vocab(const Vocab& vocab, std::string_view override_name,
                                     std::string_view override_hint) {
  return override_name.empty() ? detect(vocab.chat_template, override_hint) : by_name(override_name);
}

std::string_view ChatTemplate::name() const {
  switch (family_) {
    case Family::llama3:
      return "llama3";
    case Family::chatml:
      return "chatml";
    case Family::qwen3:
      return "qwen3";
  }
  return "?";
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  std::string prompt;
  switch (family_) {
    case Family::llama3:
      for (const ChatMessage& message : messages) {
        prompt += "<|start_header_id|>" + message.role + "<|end_header_id|>\n\n";
        prompt += strip(message.content, kWhitespace);
        prompt += "<|eot_id|>";
      }
      if (add_generation_prompt) prompt += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return prompt;
    case Family::chatml:
      for (const ChatMessage& message : messages)
        prompt += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
      if (add_generation_prompt) prompt += "<|im_start|>assistant\n";
      return prompt;
    case Family::qwen3:
      return render_qwen3(messages, add_generation_prompt);
  }
  return prompt;
}

std::string ChatTemplate::render_qwen3(const std::vector<ChatMessage>& messages,
                                       bool add_generation_prompt) const {
  const std::size_t n = messages.size();
  // The last user message that is a real query (think blocks are kept only after it).
  std::size_t last_query = n - 1;
  for (std::size_t i = n; i-- > 0;)
    if (messages[i].role == "user" && !is_tool_response(messages[i])) {
      last_query = i;
      break;
    }

  std::string prompt;
  for (std::size_t i = 0; i < n; ++i) {
    const ChatMessage& message = messages[i];
    const bool last = i + 1 == n;
    if (message.role == "user" || message.role == "system") {
      prompt += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
    } else if (message.role == "assistant") {
      std::string_view content = message.content, reasoning;
      if (const std::size_t close = content.rfind("</think>"); close != std::string_view::npos) {
        const std::string_view before = content.substr(0, content.find("</think>"));
        const std::size_t open = before.rfind("<think>");
        const std::string_view last_block =
            open == std::string_view::npos ? before : before.substr(open + 7);
        reasoning = lstrip(rstrip(last_block, "\n"), "\n");
        content = lstrip(content.substr(close + 8), "\n");
      }
      prompt += "<|im_start|>assistant\n";
      if (i > last_query && (last || !reasoning.empty())) {
        prompt += "<think>\n";
        prompt += strip(reasoning, "\n");
        prompt += "\n</think>\n\n";
        prompt += lstrip(content, "\n");
      } else {
        prompt += content;
      }
      prompt += "<|im_end|>\n";
    } else if (message.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") prompt += "<|im_start|>user";
      prompt += "\n<tool_response>\n" + message.content + "\n</tool_response>";
      if (last || messages[i + 1].role != "tool") prompt += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) {
    prompt += "<|im_start|>assistant\n";
    if (!enable_thinking_) prompt += "<think>\n\n</think>\n\n";
  }
  return prompt;
}

}  // namespace mkv
