#include "kv/presses/attention_scores.h"

#include <algorithm>
#include <cmath>

#include "ops/attention_kernels.h"
#include "ops/vec.h"

namespace mkv {

void add_attention(const float* q, int nq, int64_t q_stride, const int32_t* visible, const float* keys, int d_k,
                   float scale, float weight, float* acc, std::vector<float>& logits) {
  constexpr int kQueriesPerPass = 8;  // bounds the scratch: (8, visible) logits
  for (int i0 = 0; i0 < nq; i0 += kQueriesPerPass) {
    const int n = std::min(kQueriesPerPass, nq - i0);
    const int32_t rows = *std::max_element(visible + i0, visible + i0 + n);
    if (rows <= 0) continue;
    logits.resize(std::size_t(n) * rows);  // (n, rows)
    attn_group_logits(keys, false, rows, d_k, q + i0 * q_stride, n, q_stride, scale, logits.data(), rows);
    for (int i = 0; i < n; ++i) {
      const int32_t seen = visible[i0 + i];
      if (seen <= 0) continue;
      float* l = logits.data() + std::size_t(i) * rows;
      const float norm = float(weight / vec_exp_shifted(l, seen, vec_max(l, seen)));
      vec_axpy(norm, l, acc, seen);
    }
  }
}

int32_t visible_rows(const int32_t* positions, int32_t n, int32_t position) {
  return int32_t(std::upper_bound(positions, positions + n, position) - positions);
}

}  // namespace mkv
