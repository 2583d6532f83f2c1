// The random-weight model spec the engine tests use for a preset shape and weight type: K-quant
// types need rows of 256 values, so their models are widened to that.
#pragma once

#include <string>

#include "model/random_model.h"
#include "ops/ggml_type.h"

namespace mkv::test {

inline RandomModelSpec random_model_spec(const std::string& preset, GgmlType type) {
  RandomModelSpec spec = RandomModelSpec::preset(preset);
  spec.type = type;
  if (ggml_type_info(type).block_size == 256) {
    spec.n_embd = 256;
    spec.n_ff = 256;
    spec.head_dim = 64;
  }
  return spec;
}

}  // namespace mkv::test
