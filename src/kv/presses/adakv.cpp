// Ada-KV: "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget Allocation for Efficient LLM
// Inference" (Feng et al., 2024, arXiv 2407.11550). docs/METHODS.md §6.6.
//
// A wrapper around any scorer the catalogue marks adaptive_scorer (snapkv, h2o, and every new one
// that reads no parameter adakv lacks): inside a layer of H KV heads with candidate budget
// B = L − window − sinks, the global top H·B scores give c_h per head; head h keeps
// b_h = round(c_h(1 − a) + aB) plus its protected rows (adaptive_budgets in selection.h). Heads
// become ragged. With alloc=pyramid_adaptive (the paper's Ada-Pyramid) the layer budgets are
// PyramidKV's instead of L each; alloc=global ranks every head of every layer at once.
//
// Spec: adakv:scorer=snapkv,safeguard=0.2,window=auto,kernel=auto,sinks=4,rounds=1,alloc=adaptive,beta=20,nc=0
// (+ budget, ...). MomentKV with this allocation is the press momentkv:alloc=adaptive (one name per
// method).
#include "kv/press_config.h"
#include "kv/presses/press_params.h"
#include "kv/presses/scorer_press.h"

namespace mkv {
namespace {

const PressDef& inner(const PressConfig& c) { return find_press(c.choice("scorer")); }

const PressRegistration kRegistration{PressDef{
    .name = "adakv",
    .python_class = "AdaKV",
    .summary = "Ada-KV: adaptive per-head budgets around any scorer",
    .order = 50,
    .params = {{.key = "scorer", .kind = ParamKind::Choice, .fallback = "snapkv",  // choices: the catalogue's
                .help = "scores the adaptive allocation uses (MomentKV with it: momentkv:alloc=adaptive)"},
               press_params::safeguard(), press_params::window(), press_params::kernel(), press_params::sinks(),
               press_params::rounds(),
               {.key = "alloc", .kind = ParamKind::Choice, .fallback = "adaptive",
                .choices = {"adaptive", "pyramid_adaptive", "global"},
                .help = "per-head budgets inside each layer, in PyramidKV's layer budgets, or over all layers"},
               press_params::beta()},
    .scorer = [](const PressConfig& c) { return inner(c).scorer(c); },
    .queries = [](const PressConfig& c) { return inner(c).queries ? inner(c).queries(c) : QueryUse::None; },
}};

}  // namespace
}  // namespace mkv
