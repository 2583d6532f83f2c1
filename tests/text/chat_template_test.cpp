// Chat templates: renderings of chat.json (llama.cpp) and the token ids llama.cpp feeds for them,
// family detection from the GGUF template text, the override by name, and bad templates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "text/chat_template.h"
#include "text/tokenizer_bpe.h"

namespace mkv {
namespace {

std::vector<ChatMessage> messages_of(const nlohmann::json& conversation) {
  std::vector<ChatMessage> messages;
  for (const auto& m : conversation["messages"])
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  return messages;
}

// Which chat.json rendering each (family, add_generation_prompt, enable_thinking) must equal.
// Llama-3 follows llama_chat_apply_template: its Jinja template ignores add_generation_prompt and
// always appends the assistant header, which the built-in formatter (and we) do not. Qwen3 follows
// the Jinja rendering (think blocks), which llama.cpp's built-in ChatML formatter does not produce.
struct Expectation {
  std::string source, variant;
  bool add_generation_prompt, enable_thinking;
};

void check_conversation(const std::filesystem::path& folder, const std::string& name,
                        const std::vector<Expectation>& expectations) {
  const auto chat = nlohmann::json::parse(test::read_file(folder / "chat.json"))[name];
  const Vocab vocab = Vocab::from_gguf(GgufFile::open((folder / (name + "-vocab.gguf")).string()));
  EXPECT_EQ(vocab.chat_template, chat["chat_template"].get<std::string>());
  ChatTemplate chat_template = ChatTemplate::for_vocab(vocab);
  const BpeTokenizer tokenizer(vocab);
  const auto messages = messages_of(chat);
  for (const auto& e : expectations) {
    SCOPED_TRACE(name + " " + e.source + "/" + e.variant);
    chat_template.set_enable_thinking(e.enable_thinking);
    const std::string prompt = chat_template.render(messages, e.add_generation_prompt);
    EXPECT_EQ(prompt, chat["renderings"][e.source][e.variant].get<std::string>());
    EXPECT_EQ(
        tokenizer.encode(prompt, true, true),
        chat["ids_add_special_parse_special"][e.source][e.variant].get<std::vector<int32_t>>());
  }
}

TEST(ChatTemplateGolden, Llama3MatchesLlamaCpp) {
  MKV_REQUIRE_ASSET(chat, "golden/tokenizer/chat.json");
  check_conversation(chat.parent_path(), "llama3",
                     {{"llama_chat_apply_template", "add_generation_prompt", true, true},
                      {"llama_chat_apply_template", "no_generation_prompt", false, true},
                      {"jinja", "add_generation_prompt", true, true},
                      {"jinja", "add_generation_prompt_enable_thinking_false", true, false}});
}

TEST(ChatTemplateGolden, Qwen3MatchesLlamaCppJinja) {
  MKV_REQUIRE_ASSET(chat, "golden/tokenizer/chat.json");
  check_conversation(chat.parent_path(), "qwen3",
                     {{"jinja", "add_generation_prompt", true, true},
                      {"jinja", "no_generation_prompt", false, true},
                      {"jinja", "add_generation_prompt_enable_thinking_false", true, false},
                      {"jinja", "no_generation_prompt_enable_thinking_false", false, false}});
}

TEST(ChatTemplate, DetectsFamiliesFromTemplateText) {
  EXPECT_EQ(ChatTemplate::detect("{{ '<|start_header_id|>' + role }}").family(),
            ChatTemplate::Family::llama3);
  EXPECT_EQ(ChatTemplate::detect("{{ '<|im_start|>' + role }}").family(),
            ChatTemplate::Family::chatml);
  EXPECT_EQ(ChatTemplate::detect("{{ '<|im_start|>' }}{{ '<think>' }}").family(),
            ChatTemplate::Family::qwen3);
  EXPECT_EQ(ChatTemplate::by_name("chatml").name(), "chatml");
}

TEST(ChatTemplate, UnknownOrMissingTemplateIsAnErrorThatNamesTheOverride) {
  for (const std::string& text : {std::string(), std::string("{{ '[INST] ' + content }}")}) {
    try {
      ChatTemplate::detect(text);
      ADD_FAILURE() << "expected MkvError for '" << text << "'";
    } catch (const MkvError& e) {
      EXPECT_NE(std::string(e.what()).find("--chat-template"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(ChatTemplate::by_name("vicuna"), MkvError);
  Vocab vocab;
  vocab.chat_template = "{{ '[INST]' }}";
  EXPECT_EQ(ChatTemplate::for_vocab(vocab, "llama3").family(), ChatTemplate::Family::llama3);
  EXPECT_THROW(ChatTemplate::for_vocab(vocab), MkvError);
}

TEST(ChatTemplate, ChatMlAndLlama3Turns) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", " Hi \n"}};
  EXPECT_EQ(ChatTemplate::by_name("chatml").render(messages, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi \n<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(ChatTemplate::by_name("llama3").render(messages, false),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

// Qwen3: reasoning before "</think>" moves into the think block only after the last user query;
// earlier assistant turns lose it; tool results are grouped into one user turn.
TEST(ChatTemplate, Qwen3ThinkBlocksAndToolResponses) {
  const auto qwen3 = ChatTemplate::by_name("qwen3");
  const std::vector<ChatMessage> messages = {
      {"user", "Q1"},      {"assistant", "<think>\nold reasoning\n</think>\n\nA1"},
      {"user", "Q2"},      {"assistant", "<think>\nplan\n</think>\n\ncall"},
      {"tool", "r1"},      {"tool", "r2"},
      {"assistant", "A2"},
  };
  EXPECT_EQ(qwen3.render(messages, false),
            "<|im_start|>user\nQ1<|im_end|>\n"
            "<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>user\nQ2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nplan\n</think>\n\ncall<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n"
            "</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n");
}

}  // namespace
}  // namespace mkv
