// momentkv make-model: writes a seeded random-weight GGUF at a real model's shape.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "commands.h"
#include "quantity_text.h"
#include "core/error.h"
#include "model/random_model.h"

namespace mkv::cli {

int run_make_model(const MakeModelOptions& o) {
  MKV_CHECK(!o.output.empty(), "give an output file with -o");
  RandomModelSpec spec = RandomModelSpec::preset(o.shape);
  spec.set_weight_types(o.type);
  spec.seed = o.seed;
  MKV_CHECK(!std::filesystem::is_directory(o.output), "-o '{}' is a directory; give a file name", o.output);
  const auto start = std::chrono::steady_clock::now();
  write_random_model(spec, o.output);
  // Reported once written, so that a failure leaves only its error line.
  fmt::print(stderr, "wrote {} ({} {}, {} parameters, seed {}) to {}: {} in {:.1f} s\n", o.shape, spec.arch,
             o.type, params_text(double(spec.parameter_count())), o.seed, o.output,
             size_text(double(std::filesystem::file_size(o.output))),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace mkv::cli
