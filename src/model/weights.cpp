#include "model/weights.h"

#include <fmt/format.h>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "ops/quant.h"

namespace mkv {
namespace {

class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& file) : file_(file) {}

  // A 2-D matrix with `rows` outputs of `cols` inputs (GGUF dims [cols, rows]).
  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensorInfo& t = file_.tensor(name);
    check_shape(t, {cols, rows});
    MKV_CHECK(ggml_type_info(t.type).computable, "{}: tensor '{}' has type {}, which this engine cannot compute with",
              file_.path(), name, ggml_type_info(t.type).name);
    return WeightMatrix{t.type, t.data, rows, cols};
  }

  // A 1-D tensor of n values, dequantised to float32; empty when optional and absent.
  std::vector<float> vector(const std::string& name, int64_t n, bool optional = false) const {
    const GgufTensorInfo* t = file_.find_tensor(name);
    if (!t && optional) return {};
    if (!t) t = &file_.tensor(name);  // throws "missing required tensor"
    check_shape(*t, {n});
    std::vector<float> values(n);
    dequantize_row(t->type, t->data, values.data(), n);
    return values;
  }

 private:
  void check_shape(const GgufTensorInfo& t, const std::vector<int64_t>& expected) const {
    MKV_CHECK(t.dims == expected, "{}: tensor '{}' has shape [{}], expected [{}]", file_.path(), t.name,
              fmt::join(t.dims, ", "), fmt::join(expected, ", "));
  }
  const GgufFile& file_;
};

}  // namespace

ModelWeights ModelWeights::from_gguf(const GgufFile& file, const ModelConfig& c) {
  TensorBinder bind(file);
  ModelWeights w;
  w.token_embd = bind.matrix("token_embd.weight", c.n_vocab, c.n_embd);
  w.output_norm = bind.vector("output_norm.weight", c.n_embd);
  w.output = file.find_tensor("output.weight") ? bind.matrix("output.weight", c.n_vocab, c.n_embd) : w.token_embd;
  w.rope_freqs = bind.vector("rope_freqs.weight", c.rope_dim / 2, /*optional=*/true);

  const int64_t q_width = int64_t{c.n_heads} * c.head_dim_k;
  const int64_t k_width = int64_t{c.n_kv_heads} * c.head_dim_k;
  const int64_t v_width = int64_t{c.n_kv_heads} * c.head_dim_v;
  for (int l = 0; l < c.n_layers; ++l) {
    auto name = [l](const char* what) { return fmt::format("blk.{}.{}", l, what); };
    LayerWeights lw;
    lw.attn_norm = bind.vector(name("attn_norm.weight"), c.n_embd);
    lw.wq = bind.matrix(name("attn_q.weight"), q_width, c.n_embd);
    lw.wk = bind.matrix(name("attn_k.weight"), k_width, c.n_embd);
    lw.wv = bind.matrix(name("attn_v.weight"), v_width, c.n_embd);
    if (c.qkv_bias) {
      lw.bq = bind.vector(name("attn_q.bias"), q_width);
      lw.bk = bind.vector(name("attn_k.bias"), k_width);
      lw.bv = bind.vector(name("attn_v.bias"), v_width);
    }
    if (c.qk_norm) {
      lw.q_norm = bind.vector(name("attn_q_norm.weight"), c.head_dim_k);
      lw.k_norm = bind.vector(name("attn_k_norm.weight"), c.head_dim_k);
    }
    lw.wo = bind.matrix(name("attn_output.weight"), c.n_embd, int64_t{c.n_heads} * c.head_dim_v);
    lw.ffn_norm = bind.vector(name("ffn_norm.weight"), c.n_embd);
    lw.w_gate = bind.matrix(name("ffn_gate.weight"), c.n_ff, c.n_embd);
    lw.w_up = bind.matrix(name("ffn_up.weight"), c.n_ff, c.n_embd);
    lw.w_down = bind.matrix(name("ffn_down.weight"), c.n_embd, c.n_ff);
    w.layers.push_back(std::move(lw));
  }
  return w;
}

}  // namespace mkv
