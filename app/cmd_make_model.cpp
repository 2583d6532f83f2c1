// momentkv make-model: writes a seeded random-weight GGUF at a real model's shape.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "model/random_model.h"

namespace mkv::cli {

int run_make_model(const MakeModelOptions& o) {
  MKV_CHECK(!o.output.empty(), "give an output file with -o");
  RandomModelSpec spec = RandomModelSpec::preset(o.shape);
  const auto type = ggml_type_from_name(o.type);
  MKV_CHECK(type && ggml_type_info(*type).computable, "unsupported tensor type '{}' (use F32, F16, BF16, Q8_0, "
            "Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)", o.type);
  spec.type = *type;
  spec.seed = o.seed;
  fmt::print(stderr, "writing {} ({} {}, {:.2f} B parameters, seed {}) to {}\n", o.shape, spec.arch, o.type,
             spec.parameter_count() / 1e9, o.seed, o.output);
  const auto start = std::chrono::steady_clock::now();
  write_random_model(spec, o.output);
  fmt::print(stderr, "done: {:.2f} GiB in {:.1f} s\n", std::filesystem::file_size(o.output) / double(1 << 30),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace mkv::cli
