// Softmax attention probabilities of one query over a head's rows, the building block of the
// attention-based scorers (SnapKV's observation window, H2O's column sums).
#pragma once

#include <cstdint>
#include <vector>

namespace mkv {

// For each of nq queries (q + i * q_stride, d_k values) that sees the first visible[i] rows:
// adds weight · softmax(scale · q_i·k_j) over rows j < visible[i] to acc[j].
// keys: (≥ max visible, d_k) float32; acc: (≥ max visible); logits: scratch.
// Each key row is read once per group of up to 8 queries.
void add_attention(const float* q, int nq, int64_t q_stride, const int32_t* visible, const float* keys, int d_k,
                   float scale, float weight, float* acc, std::vector<float>& logits);

// Rows a query at position `position` may see: the count of rows with positions ≤ it
// (positions strictly increasing, length n).
int32_t visible_rows(const int32_t* positions, int32_t n, int32_t position);

}  // namespace mkv
