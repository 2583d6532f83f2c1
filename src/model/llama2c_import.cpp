#include "model/llama2c_import.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/text_file.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace mkv {
namespace {

struct Llama2cHeader {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

// A whole checkpoint or vocabulary file (a directory, a missing file or an endless device is an
// error naming it); checkpoints of large models run to tens of GiB.
std::string read_file(const std::string& path, std::string_view what) {
  return read_text_file(path, what, TextFileLimits{.max_file_bytes = std::uint64_t{256} << 30});
}

// Reads consecutive fp32 tensors out of the checkpoint body.
class FloatReader {
 public:
  FloatReader(const std::string& bytes, std::size_t offset) : bytes_(bytes), offset_(offset) {}
  std::vector<float> take(int64_t n) {
    std::vector<float> values(n);
    std::memcpy(values.data(), bytes_.data() + offset_, n * sizeof(float));
    offset_ += n * sizeof(float);
    return values;
  }
  std::vector<float> slice(const std::vector<float>& all, int64_t index, int64_t n) {
    return {all.begin() + index * n, all.begin() + (index + 1) * n};
  }

 private:
  const std::string& bytes_;
  std::size_t offset_;
};

Llama2cHeader read_header(const std::string& path, const std::string& bytes) {
  MKV_CHECK(bytes.size() >= sizeof(Llama2cHeader), "{}: {} bytes is too short for a llama2.c header", path,
            bytes.size());
  Llama2cHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  MKV_CHECK(h.dim > 0 && h.hidden_dim > 0 && h.n_layers > 0 && h.n_heads > 0 && h.n_kv_heads > 0 &&
                h.vocab_size != 0 && h.seq_len > 0,
            "{}: header has a non-positive size (dim {}, hidden {}, layers {}, heads {}, kv heads {}, vocab {}, "
            "seq_len {})", path, h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size, h.seq_len);
  MKV_CHECK(h.dim % h.n_heads == 0 && h.n_heads % h.n_kv_heads == 0 && (h.dim / h.n_heads) % 2 == 0,
            "{}: dim {} with {} heads and {} KV heads is not a valid head layout", path, h.dim, h.n_heads,
            h.n_kv_heads);
  return h;
}

// The RoPE base the stored table was built with (llama2.c's table is cos(pos * base^(-2i/head_dim))):
// read from pair 1 at position 1, snapped to 10000 (the GGUF default) within 0.1%, then every
// pair at position 1 is checked against it.
double rope_base_of_table(const std::string& path, const std::vector<float>& cos_table, int head_dim, int seq_len) {
  if (seq_len < 2 || head_dim < 4) return 10000.0;  // no pair whose angle depends on the base
  const double angle = std::acos(static_cast<double>(cos_table[head_dim / 2 + 1]));
  MKV_CHECK(angle > 0.0, "{}: freq_cis_real[1][1] = {} is not a RoPE table", path, cos_table[head_dim / 2 + 1]);
  double base = std::pow(angle, -head_dim / 2.0);
  if (std::abs(base / 10000.0 - 1.0) < 1e-3) base = 10000.0;
  for (int i = 0; i < head_dim / 2; ++i) {
    const double expected = std::cos(std::pow(base, -2.0 * i / head_dim));
    MKV_CHECK(std::abs(cos_table[head_dim / 2 + i] - expected) < 1e-4,
              "{}: freq_cis_real[1][{}] = {} is not RoPE with base {:.6g} ({}), the base pair 1 implies", path, i,
              cos_table[head_dim / 2 + i], base, expected);
  }
  return base;
}

// llama2.c tokenizer: int32 max_token_length, then per token float score, int32 length, bytes.
void add_llama2c_vocab(GgufWriter& w, const std::string& path, int n_vocab) {
  const std::string bytes = read_file(path, "--tokenizer");
  std::size_t at = sizeof(int32_t);
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int id = 0; id < n_vocab; ++id) {
    float score;
    int32_t length;
    MKV_CHECK(at + 8 <= bytes.size(), "{}: truncated at token {} of {}", path, id, n_vocab);
    std::memcpy(&score, bytes.data() + at, 4);
    std::memcpy(&length, bytes.data() + at + 4, 4);
    at += 8;
    MKV_CHECK(length >= 0 && at + length <= bytes.size(), "{}: token {} has a bad length {}", path, id, length);
    std::string piece(bytes.data() + at, length);
    at += length;
    if (piece == "\n<s>\n" || piece == "\n</s>\n") piece = piece.substr(1, piece.size() - 2);
    int32_t type = 1;  // normal
    if (id == 0) {
      type = 2;  // unknown
    } else if (piece == "<s>" || piece == "</s>") {
      type = 3;  // control
    } else if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>') {
      type = 6;  // byte
    }
    std::string spm_piece;
    for (char c : piece) spm_piece += c == ' ' ? std::string("\u2581") : std::string(1, c);
    tokens.push_back(std::move(spm_piece));
    scores.push_back(score);
    types.push_back(type);
  }
  MKV_CHECK(at == bytes.size(), "{}: {} bytes left after {} tokens (does the vocabulary match the model?)", path,
            bytes.size() - at, n_vocab);
  w.set_string_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string("tokenizer.ggml.model", "llama");
}

void add_gguf_vocab(GgufWriter& w, const std::string& path, int n_vocab) {
  const GgufFile vocab = GgufFile::open(path);
  const auto n_tokens = vocab.get_string_array("tokenizer.ggml.tokens").size();
  MKV_CHECK(static_cast<int>(n_tokens) == n_vocab, "{}: vocabulary has {} tokens, the model {}", path, n_tokens,
            n_vocab);
  for (const auto& [key, value] : vocab.metadata())
    if (key.rfind("tokenizer.", 0) == 0 && key.find("_token_id") == std::string::npos) w.set(key, value);
}

}  // namespace

void import_llama2c(const Llama2cImport& o) {
  const std::string bytes = read_file(o.model_path, "--model");
  const Llama2cHeader h = read_header(o.model_path, bytes);
  const bool shared_classifier = h.vocab_size > 0;
  const int64_t vocab = std::abs(h.vocab_size), dim = h.dim, hidden = h.hidden_dim, layers = h.n_layers;
  const int64_t head_dim = dim / h.n_heads, kv_dim = head_dim * h.n_kv_heads;
  const int64_t n_floats = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * dim * kv_dim + 3 * dim * hidden) +
                           dim + int64_t{h.seq_len} * head_dim + (shared_classifier ? 0 : vocab * dim);
  MKV_CHECK(bytes.size() == sizeof(Llama2cHeader) + n_floats * sizeof(float),
            "{}: {} bytes, but the header (dim {}, hidden {}, {} layers, {} heads, {} KV heads, vocab {}, seq_len {}) "
            "implies {}", o.model_path, bytes.size(), h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads,
            h.vocab_size, h.seq_len, sizeof(Llama2cHeader) + n_floats * sizeof(float));
  const auto& type_info = ggml_type_info(o.type);
  for (int64_t width : {dim, hidden})
    MKV_CHECK(width % type_info.block_size == 0, "width {} is not a multiple of the {} block size {}", width,
              type_info.name, type_info.block_size);

  FloatReader r(bytes, sizeof(Llama2cHeader));
  const auto tok_emb = r.take(vocab * dim);
  const auto rms_att = r.take(layers * dim);
  const auto wq = r.take(layers * dim * dim), wk = r.take(layers * kv_dim * dim), wv = r.take(layers * kv_dim * dim);
  const auto wo = r.take(layers * dim * dim);
  const auto rms_ffn = r.take(layers * dim);
  const auto w1 = r.take(layers * hidden * dim), w2 = r.take(layers * dim * hidden), w3 = r.take(layers * hidden * dim);
  const auto rms_final = r.take(dim);
  const auto freq_cis_real = r.take(int64_t{h.seq_len} * head_dim / 2);
  r.take(int64_t{h.seq_len} * head_dim / 2);  // freq_cis_imag: implied by the real part
  const auto classifier = shared_classifier ? tok_emb : r.take(vocab * dim);
  const double rope_base = rope_base_of_table(o.model_path, freq_cis_real, static_cast<int>(head_dim), h.seq_len);

  GgufWriter w;
  if (o.tokenizer_path.size() >= 5 && o.tokenizer_path.substr(o.tokenizer_path.size() - 5) == ".gguf") {
    add_gguf_vocab(w, o.tokenizer_path, static_cast<int>(vocab));
  } else {
    add_llama2c_vocab(w, o.tokenizer_path, static_cast<int>(vocab));
  }
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", o.name);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.seperator_token_id", 0xFFFFFFFFu);  // the key's spelling is llama.cpp's
  w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  w.set_u32("llama.context_length", o.context_length > 0 ? o.context_length : h.seq_len);
  w.set_u32("llama.embedding_length", h.dim);
  w.set_u32("llama.feed_forward_length", h.hidden_dim);
  w.set_u32("llama.attention.head_count", h.n_heads);
  w.set_u32("llama.attention.head_count_kv", h.n_kv_heads);
  w.set_u32("llama.block_count", h.n_layers);
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
  if (rope_base != 10000.0) w.set_f32("llama.rope.freq_base", static_cast<float>(rope_base));
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);

  auto matrix = [&](const std::string& name, const std::vector<float>& all, int64_t l, int64_t rows, int64_t cols) {
    w.add_tensor_f32(name, o.type, {cols, rows}, r.slice(all, l, rows * cols));
  };
  auto norm = [&](const std::string& name, const std::vector<float>& all, int64_t l) {
    w.add_tensor_f32(name, GgmlType::F32, {dim}, r.slice(all, l, dim));
  };
  matrix("token_embd.weight", tok_emb, 0, vocab, dim);
  norm("output_norm.weight", rms_final, 0);
  matrix("output.weight", classifier, 0, vocab, dim);
  for (int64_t l = 0; l < layers; ++l) {
    auto name = [l](const char* what) { return fmt::format("blk.{}.{}", l, what); };
    matrix(name("attn_q.weight"), wq, l, dim, dim);
    matrix(name("attn_k.weight"), wk, l, kv_dim, dim);
    matrix(name("attn_v.weight"), wv, l, kv_dim, dim);
    matrix(name("attn_output.weight"), wo, l, dim, dim);
    norm(name("attn_norm.weight"), rms_att, l);
    matrix(name("ffn_gate.weight"), w1, l, hidden, dim);
    matrix(name("ffn_down.weight"), w2, l, dim, hidden);
    matrix(name("ffn_up.weight"), w3, l, hidden, dim);
    norm(name("ffn_norm.weight"), rms_ffn, l);
  }
  w.write(o.output_path);
}

}  // namespace mkv
