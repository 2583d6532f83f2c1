// Full: no eviction, the reference every method is compared against. docs/METHODS.md §6.1.
// Spec: full (no parameters).
#include "kv/press.h"
#include "kv/press_catalog.h"

namespace mkv {
namespace {

class FullPress : public Press {
 public:
  void reset(const PressGeometry& geometry) override { geometry.validate(); }
  void compress(KvCache& cache, CompressReason reason) override {}
};

const PressRegistration kRegistration{PressDef{
    .name = "full",
    .python_class = "Full",
    .summary = "no eviction (reference)",
    .order = 0,
    .make = [](const PressConfig&) -> std::unique_ptr<Press> { return std::make_unique<FullPress>(); },
}};

}  // namespace
}  // namespace mkv
