// MomentKV: "MomentKV" (Li, Li, Lan, 2026, arXiv 2606.01563). docs/METHODS.md §3–4, §7.
//
// Moment-informed eviction (MI): the residual of retained row j against the current summary of
// the evicted tokens, its own key standing in for the query,
//   r_j = v_j − f̂_E(k_j) = v_j − v̄ − τ C k_j    (n_e = 0: r_j = v_j − the head's mean value),
// scored α_j·‖r_j‖ with α_j the SnapKV observation-window score (group mean). Evicts in `rounds`
// rounds, each recomputing residuals against the moments grown by the previous rounds.
// NC (normalisation-corrected attention) on by default.
//
// Spec and defaults:
//   momentkv:window=auto,kernel=auto,sinks=4,rounds=1,alloc=global,nc=1,variant=means
//   alloc      global (Ada-KV's rule on α·‖r‖ over every head of every layer, safeguard=0.2; the
//              default, chosen on the dev split) | adaptive (the same inside each layer) | uniform |
//              pyramid | pyramid_adaptive (allocation.h)
//   nc=0       MI selection without NC (moments still tracked: the scores need them)
//   variant    means:   groups=2, means_only=1 unless given (the default, chosen on the dev split:
//                       docs/results/defaults_dev.md; 2·(d_k + d_v + 1) numbers/head)
//              paper:   one summary per head, unclipped (d_k·d_v + d_k + d_v + 1 numbers/head)
//              grouped: groups=16, clip=1 unless given (docs/METHODS.md §7.1's best; G·(d_k·d_v +
//                       d_k + d_v + 2) numbers/head, ≈ 16·(d+2)/2 tokens at d_k = d_v = d)
//   groups=G   G moment groups per head, each its own virtual slot (needs a MomentGroups cache)
//   clip=1     trust region: ‖τ C q‖ ≤ RMS spread of the group's values (+1 number per group)
//   means_only=1  groups store means only (d_k + d_v + 1 numbers per group)
#include <cmath>

#include "core/error.h"
#include "kv/nc.h"
#include "kv/press_config.h"
#include "kv/presses/press_params.h"
#include "kv/presses/snapkv.h"

namespace mkv {
namespace {

// α·‖r‖: SnapKV's observation-window scores (α) times the residual norms against the moments.
class MomentScorer : public Scorer {
 public:
  MomentScorer(int window, int kernel);
  void reset(const PressGeometry& geometry) override;
  void set_layer_budget(int32_t budget) override { alpha_.set_layer_budget(budget); }
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions,
               const KvCache& cache) override;
  void score(const KvCache& cache, int layer, HeadScores& scores) override;
  bool needs_moments() const override { return true; }

 private:
  SnapKVScorer alpha_;  // α, the observation-window attention
};


// residual_norms (length): ‖v_j − estimate_j‖ where estimate_j = f̂_E(k_j) when the head has
// evicted tokens, else the mean value of the head's rows.
void residual_norms(const KvHeadView& view, float scale, std::vector<float>& norms) {
  const int d_v = view.head_dim_v;
  const HeadRows keys = HeadRows::keys(view), values = HeadRows::values(view);  // (length, d)
  const bool summary = view.moments != nullptr && view.moments->count() > 0;
  std::vector<float> estimates;  // (length, d_v) f̂_E(k_j), or (1, d_v) the rows' mean
  if (summary) {
    estimates.resize(std::size_t(view.length) * d_v);
    moment_estimates(*view.moments, keys.data(), view.length, scale, estimates.data());
  } else {
    estimates.assign(d_v, 0.0f);
    for (int32_t j = 0; j < view.length; ++j)
      for (int b = 0; b < d_v; ++b) estimates[b] += values.row(j)[b];
    for (float& x : estimates) x /= float(std::max(view.length, 1));
  }
  norms.assign(view.length, 0.0f);
  for (int32_t j = 0; j < view.length; ++j) {
    const float* estimate = summary ? &estimates[std::size_t(j) * d_v] : estimates.data();
    double sq = 0.0;
    for (int b = 0; b < d_v; ++b) {
      const double r = values.row(j)[b] - estimate[b];
      sq += r * r;
    }
    norms[j] = float(std::sqrt(sq));
  }
}


MomentScorer::MomentScorer(int window, int kernel) : alpha_(window, kernel) {}

void MomentScorer::reset(const PressGeometry& geometry) {
  Scorer::reset(geometry);
  alpha_.reset(geometry);
}

void MomentScorer::observe(int layer, int n_tokens, const float* q, const int32_t* positions,
                           const KvCache& cache) {
  alpha_.observe(layer, n_tokens, q, positions, cache);
}

void MomentScorer::score(const KvCache& cache, int layer, HeadScores& scores) {
  alpha_.score(cache, layer, scores);  // α
#pragma omp parallel for schedule(dynamic)
  for (int kv = 0; kv < geometry_.n_kv_heads; ++kv) {
    const KvHeadView view = cache.head(layer, kv);
    std::vector<float> norms;  // (length) ‖r_j‖
    residual_norms(view, geometry_.scale, norms);
    for (int32_t j = 0; j < view.length; ++j) scores[kv][j] *= norms[j];
  }
}

// MomentKV's variants set other parameters' defaults (docs/METHODS.md §7.1).
void resolve_variant(PressConfig& c) {
  const std::string& variant = c.choice("variant");
  if (variant == "grouped") {
    c.default_to("groups", "16");
    c.default_to("clip", "1");
  } else if (variant == "means") {
    c.default_to("groups", "2");
    c.default_to("means_only", "1");
  } else if (variant == "paper") {
    MKV_CHECK(!c.flag("clip") && c.integer("groups") == 1 && !c.flag("means_only"),
              "press '{}': variant=paper fixes groups=1, clip=0, means_only=0 (use variant=grouped)", c.name());
  }
}

// The default "global" was chosen on the dev split (docs/results/defaults_dev.md, "Allocation across
// layers"): lower KL at every budget and higher retrieval at 48 and 64 than "adaptive". The default
// variant "means" (2 groups) was chosen there too: KL as low as 16 groups at equal tokens for an
// eighth of the statistics, so it also wins at equal bytes.
const PressRegistration kRegistration{PressDef{
    .name = "momentkv",
    .python_class = "MomentKV",
    .summary = "MomentKV: moment-informed eviction (alpha·|residual|) + NC",
    .order = 60,
    .params = {press_params::window(), press_params::kernel(), press_params::sinks(), press_params::rounds(),
               press_params::alloc("global", "budget allocation: global = Ada-KV's rule over every head of every layer"),
               press_params::safeguard(), press_params::beta(),
               {.key = "variant", .kind = ParamKind::Choice, .fallback = "means", .choices = {"paper", "grouped", "means"},
                .help = "means: 2 groups of key/value means per head; paper: one unclipped summary with co-moment "
                        "(arXiv 2606.01563); grouped: groups=16,clip=1 unless given"}},
    .nc_default = true,
    .scorer = [](const PressConfig& c) -> std::unique_ptr<Scorer> {
      return std::make_unique<MomentScorer>(c.window(), kernel_of(c));
    },
    .queries = [](const PressConfig&) { return QueryUse::Window; },
    .resolve = resolve_variant,
}};
}  // namespace
}  // namespace mkv
