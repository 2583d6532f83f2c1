// Full: no eviction, the reference every method is compared against. docs/METHODS.md §6.1.
// Spec: full (no parameters).
#pragma once

#include "kv/press.h"

namespace mkv {

class FullPress : public Press {
 public:
  void reset(const PressGeometry& geometry) override { geometry.validate(); }
  void compress(KvCache& cache, CompressReason reason) override {}
};

}  // namespace mkv
