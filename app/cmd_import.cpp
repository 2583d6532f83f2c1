// momentkv import-llama2c: converts a llama2.c checkpoint and vocabulary to a llama GGUF.
#include <fmt/format.h>

#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "model/llama2c_import.h"

namespace mkv::cli {

int run_import_llama2c(const ImportLlama2cOptions& o) {
  const auto type = ggml_type_from_name(o.type);
  MKV_CHECK(type && (*type == GgmlType::F32 || *type == GgmlType::F16 || *type == GgmlType::Q8_0),
            "unsupported tensor type '{}' (use F32, F16 or Q8_0)", o.type);
  MKV_CHECK(o.context >= 0, "--context must be positive (0 = the checkpoint's seq_len), got {}", o.context);
  import_llama2c({o.model, o.tokenizer, o.output, *type, o.context, o.name});
  fmt::print(stderr, "wrote {} ({} bytes)\n", o.output, std::filesystem::file_size(o.output));
  return 0;
}

}  // namespace mkv::cli
