// Parameters several presses share, defined once: a press lists the ones it takes in its
// registration (in its spec order); the wrappers every scorer press gets (budget, ratio,
// decode_slack, nc, groups, clip, means_only) are appended by the catalogue (press_catalog.cpp).
#pragma once

#include "kv/press_catalog.h"

namespace mkv::press_params {

inline PressParam sinks() {
  return {.key = "sinks", .kind = ParamKind::Int, .fallback = "4", .lo = 0, .hi = 1e6, .help = "first tokens always kept"};
}

// auto = tied to the layer's budget (observation_window, selection.h).
inline PressParam window() {
  return {.key = "window", .kind = ParamKind::Int, .fallback = "auto", .lo = 1, .hi = 1e6,
          .help = "observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]",
          .auto_ok = true};
}

// auto = tied to the layer's budget (pooling_kernel, snapkv.h).
inline PressParam kernel() {
  return {.key = "kernel", .kind = ParamKind::Int, .fallback = "auto", .lo = 1, .hi = 63,
          .help = "max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]", .auto_ok = true,
          .odd = true};
}

inline PressParam beta() {
  return {.key = "beta", .kind = ParamKind::Real, .fallback = "20", .lo = 1, .hi = 1e6,
          .help = "PyramidKV: smallest layer budget = (L − window)/beta"};
}

inline PressParam safeguard() {
  return {.key = "safeguard", .kind = ParamKind::Real, .fallback = "0.2", .lo = 0, .hi = 1,
          .help = "Ada-KV: share of each head's budget it keeps regardless of scores"};
}

inline PressParam rounds() {
  return {.key = "rounds", .kind = ParamKind::Int, .fallback = "1", .lo = 1, .hi = 64,
          .help = "eviction rounds, residuals recomputed each round (against the moments the earlier rounds built)"};
}

// Every budget allocation (allocation.h), with this default; a press that lists it composes with
// all of them.
inline PressParam alloc(const char* fallback, const char* help) {
  return {.key = "alloc", .kind = ParamKind::Choice, .fallback = fallback,
          .choices = {"uniform", "adaptive", "pyramid", "pyramid_adaptive", "global"}, .help = help};
}

}  // namespace mkv::press_params
