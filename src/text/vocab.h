// The vocabulary stored in a GGUF file (tokenizer.ggml.* keys), shared by both tokenizers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mkv {

class GgufFile;

// llama.cpp's token attribute ids (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
};

struct Vocab {
  std::string model;                // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (BPE)
  std::string pre;                  // tokenizer.ggml.pre ("default" when absent)
  std::vector<std::string> tokens;  // (n_vocab) token texts as stored
  std::vector<float> scores;        // (n_vocab) SentencePiece scores; empty for BPE
  std::vector<TokenType> types;     // (n_vocab)
  std::vector<std::string> merges;  // BPE merges "a b", rank = index; empty for SentencePiece
  int32_t bos = -1, eos = -1, eot = -1, unk = -1, pad = -1;  // -1 = none
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  std::string chat_template;        // tokenizer.chat_template, may be empty
  bool specials_detected = false;   // detect_special_tokens() ran (it scans every token text)

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }

  // Reads and validates the tokenizer keys (array lengths agree, ids in range); applies
  // llama.cpp's defaults for absent keys (SPM: add_bos and add_space_prefix true).
  static Vocab from_gguf(const GgufFile& file);

  // llama.cpp's load-time heuristics, applied by from_gguf and again by the Tokenizer for vocabs
  // built by hand (runs once per Vocab): when no eot id is set,
  // finds it by token text ("<|eot_id|>", "<|im_end|>", ...), and forces CONTROL on every token
  // whose text marks end of generation or a FIM pad/repo/file-separator token.
  void detect_special_tokens();
  // Ids that end generation (sorted): eos, eot, and the tokens llama.cpp recognises by text.
  std::vector<int32_t> end_of_generation_ids() const;
};

}  // namespace mkv
