// Seeded random-weight GGUF models at real or tiny shapes, written with our own GgufWriter.
// Used by `momentkv make-model` (speed measurements without downloading a model) and by tests
// that need their own fixtures of every architecture and tensor type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/ggml_type.h"

namespace mkv {

// How the 2-D weights' types are chosen: all of them `type`, or llama.cpp's "_K_M" mix on top of a
// K-quant `type` (its quantizer's choice for Q4_K_M / Q5_K_M files): Q6_K for the classifier (the
// token embedding when it is tied) and for attn_v and ffn_down in the layers use_more_bits picks
// (the first and last eighth and every third one between), `type` for the rest.
enum class WeightMix { Uniform, KQuantMedium };

struct RandomModelSpec {
  std::string arch = "llama";  // llama | qwen2 | qwen3
  std::string name = "random";
  int n_vocab = 512;
  int n_embd = 64;
  int n_layers = 2;
  int n_heads = 4;
  int n_kv_heads = 2;
  int head_dim = 16;           // qwen3 may differ from n_embd / n_heads
  int n_ff = 128;
  float rope_base = 10000.0f;
  int context_length = 4096;
  bool tied_output = false;    // no output.weight: the embedding doubles as classifier
  bool llama3_rope_freqs = false;  // write a Llama-3.1 rope_freqs.weight table
  GgmlType type = GgmlType::F32;   // type of the 2-D weights (norms stay F32)
  WeightMix mix = WeightMix::Uniform;
  uint64_t seed = 1;

  // Named shapes: llama-3.2-1b, llama-3.1-8b, qwen3-4b, qwen2.5-7b, tiny-llama, tiny-qwen2, tiny-qwen3.
  static RandomModelSpec preset(std::string_view name);
  static std::vector<std::string> preset_names();
  int64_t parameter_count() const;
  // Sets type and mix from a name: a computable type (F16, Q8_0, Q4_K, ...) or Q4_K_M / Q5_K_M.
  // Throws MkvError naming the accepted ones.
  void set_weight_types(std::string_view name);
  // The type written for the 2-D weight `role` ("attn_v", "ffn_down", "output", "token_embd", ...)
  // of `layer` (-1 outside the layers).
  GgmlType weight_type(std::string_view role, int layer) const;
};

// Writes the model (weights ~ uniform with std 1/sqrt(fan_in); a SentencePiece-style vocab of
// 3 control tokens, 256 byte tokens and filler pieces) to `path`. Throws MkvError on bad specs
// (e.g. widths not a multiple of the type's block size) or I/O failure.
void write_random_model(const RandomModelSpec& spec, const std::string& path);

}  // namespace mkv
