// Converts a llama2.c checkpoint (legacy "version 0" .bin: 7 int32 header, then fp32 weights) and
// a vocabulary (llama2.c tokenizer .bin, or the tokenizer.* keys of a GGUF) to a llama GGUF.
// The .bin's wq/wk are written unpermuted: llama2.c rotates adjacent pairs, as the engine does
// for arch llama, so stories260K.bin converts to tensors byte-identical to stories260K.gguf.
#pragma once

#include <string>

#include "ops/ggml_type.h"

namespace mkv {

struct Llama2cImport {
  std::string model_path;       // llama2.c .bin
  std::string tokenizer_path;   // tok512.bin-style tokenizer, or a .gguf whose tokenizer.* keys are copied
  std::string output_path;      // GGUF to write
  GgmlType type = GgmlType::F32;  // type of the 2-D weights; norms stay F32
  int context_length = 0;       // llama.context_length; 0 = the .bin's seq_len
  std::string name = "llama";   // general.name
};

// Throws MkvError naming the file and the problem (bad header, wrong size, vocabulary mismatch).
void import_llama2c(const Llama2cImport& options);

}  // namespace mkv
