// Normalisation-corrected inference (NC, METHODS.md §3): blends the attention output over the
// retained tokens with a closed-form estimate of the evicted tokens' output, weighted by the
// Jensen lower bound of the evicted partition function.
#pragma once

#include "kv/moment_stats.h"

namespace mkv {

// q: (d_k) the query (post-RoPE); lse_retained = log Z_R of the retained attention;
// out: (d_v) holds f_R on entry and o_NC on return. No-op when moments.count() == 0.
void nc_blend(const MomentStats& moments, const float* q, float scale, float lse_retained,
              float* out);

}  // namespace mkv
