// PyramidKV: "PyramidKV: Dynamic KV Cache Compression based on Pyramidal Information Funneling"
// (Cai et al., 2024, arXiv 2406.02069). docs/METHODS.md §6.5.
//
// SnapKV scores; layer budgets decrease linearly with depth (pyramid_budgets in selection.h):
// B = L − window, min = B/β, max = 2B − min, uniform when the prompt is shorter than 2B.
//
// Spec: pyramidkv:window=auto,kernel=auto,sinks=4,beta=20,nc=0 (+ budget, decode_slack, ...).
#include "kv/press_config.h"
#include "kv/presses/press_params.h"
#include "kv/presses/snapkv.h"

namespace mkv {
namespace {

const PressRegistration kRegistration{PressDef{
    .name = "pyramidkv",
    .python_class = "PyramidKV",
    .summary = "PyramidKV: SnapKV scores, budgets decreasing with depth",
    .order = 40,
    .params = {press_params::window(), press_params::kernel(), press_params::sinks(), press_params::beta()},
    .scorer = make_snapkv_scorer,
    .queries = [](const PressConfig&) { return QueryUse::Window; },
    .allocation = Allocation::Pyramid,
}};

}  // namespace
}  // namespace mkv
