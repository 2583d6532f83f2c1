// Normalisation-corrected inference (NC, docs/METHODS.md §3): blends the attention output over the
// retained tokens with a closed-form estimate of the evicted tokens' output, weighted by the
// Jensen lower bound of the evicted partition function.
#pragma once

#include <cstdint>

#include "kv/moment_groups.h"
#include "kv/moment_stats.h"

namespace mkv {

// q: (d_k) the query (post-RoPE); lse_retained = log Z_R of the retained attention;
// out: (d_v) holds f_R on entry and o_NC on return. No-op when moments.count() == 0.
// The paper's form: ŵ_R = σ(LSE_R − log n_e − τ q·k̄), f̂_E = v̄ + τ C q. Cost d_k·d_v.
void nc_blend(const MomentStats& moments, const float* q, float scale, float lse_retained,
              float* out);

// Grouped form (docs/METHODS.md §7): softmax over the retained tokens plus one virtual slot per
// non-empty group g (log-mass log n_g + τ q·k̄_g, value v̄_g + clip(τ C_g q)). Cost G·d_k·d_v.
void nc_blend(const MomentGroups& moments, const float* q, float scale, float lse_retained,
              float* out);

// f̂_E(q), the moment estimate of the evicted tokens' attention output (d_v) at query q; the
// mass-weighted mixture of the groups' estimates for MomentGroups. Requires count() > 0.
void moment_estimate(const MomentStats& moments, const float* q, float scale, float* out);
void moment_estimate(const MomentGroups& moments, const float* q, float scale, float* out);

// moment_estimate for n queries at once (the same values to float rounding, as matrix
// products over all queries): q (n, d_k), out (n, d_v). Requires count() > 0.
void moment_estimates(const MomentGroups& moments, const float* q, int64_t n, float scale, float* out);

}  // namespace mkv
