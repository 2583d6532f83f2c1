#include "kv/press.h"

#include "core/error.h"

namespace mkv {

void PressGeometry::validate() const {
  MKV_CHECK(n_layers > 0 && n_heads > 0 && n_kv_heads > 0 && head_dim_k > 0 && head_dim_v > 0,
            "press geometry: layers {}, heads {}, kv heads {}, head dims {}/{} must all be positive",
            n_layers, n_heads, n_kv_heads, head_dim_k, head_dim_v);
  MKV_CHECK(n_heads % n_kv_heads == 0, "press geometry: {} query heads are not a multiple of {} KV heads",
            n_heads, n_kv_heads);
  MKV_CHECK(scale > 0.0f, "press geometry: softmax scale {} must be positive", scale);
}

}  // namespace mkv
