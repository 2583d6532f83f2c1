// SentencePiece-style tokenizer for "llama" vocabularies (llama.cpp's llm_tokenizer_spm): spaces
// become "▁" (a "▁" is also put in front of the text and after each special token when the vocab
// says add_space_prefix), the text is split into UTF-8 characters, the adjacent pair whose
// concatenation is a token with the highest score is merged until none is left (leftmost pair on
// ties), and symbols that are not tokens fall back to byte tokens <0xXX> (or the unknown token).
#pragma once

#include <memory>

#include "text/tokenizer.h"

namespace mkv {

// Throws MkvError when the vocab cannot drive the tokenizer (scores missing, malformed byte token).
std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab);

}  // namespace mkv
