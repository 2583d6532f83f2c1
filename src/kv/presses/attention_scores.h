// Softmax attention probabilities of one query over a head's rows, the building block of the
// attention-based scorers (SnapKV's observation window, H2O's column sums).
#pragma once

#include <cstdint>
#include <vector>

namespace mkv {

// Adds weight · softmax(scale · q·k_j) over rows j < visible to acc (visible) .
// keys: (≥ visible, d_k); logits: scratch, resized to visible.
void add_attention(const float* q, const float* keys, int32_t visible, int d_k, float scale,
                   float weight, float* acc, std::vector<float>& logits);

// Rows a query at position `position` may see: the count of rows with positions ≤ it
// (positions strictly increasing, length n).
int32_t visible_rows(const int32_t* positions, int32_t n, int32_t position);

}  // namespace mkv
