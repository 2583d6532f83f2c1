// libFuzzer target for the GGUF reader: any input must either parse or throw MkvError, and a parsed
// file must be readable in full (every getter on every key, every byte of every tensor) without a
// sanitizer report. Build with -DMOMENTKV_FUZZ=ON and clang (see fuzz/CMakeLists.txt), then run
//   ./build-fuzz/fuzz/gguf_fuzz -max_total_time=60 [corpus_dir]
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace {

// Calls `get`, ignoring the MkvError a getter throws for a key of another type.
template <typename Get>
void ignore_type_errors(Get&& get) {
  try {
    get();
  } catch (const mkv::MkvError&) {
  }
}

// Reads everything a loader could read; returns a sum so the reads are not optimised away.
uint64_t read_everything(const mkv::GgufFile& file) {
  uint64_t sum = file.version() + file.alignment() + file.data_offset() + file.file_size();
  for (const auto& entry : file.metadata()) {
    // Not a structured binding: clang 14 lambdas cannot capture those.
    const std::string& key = entry.first;
    sum += entry.second.array_size + entry.second.elements.size();
    ignore_type_errors([&] { sum += static_cast<uint64_t>(file.get_int_opt(key).value_or(0)); });
    ignore_type_errors([&] { sum += file.get_float_opt(key).has_value(); });
    ignore_type_errors([&] { sum += file.get_bool_opt(key).value_or(false); });
    ignore_type_errors([&] { sum += file.get_string_opt(key).value_or("").size(); });
    ignore_type_errors([&] { sum += file.get_string_array(key).size(); });
    ignore_type_errors([&] { sum += file.get_int_array(key).size(); });
    ignore_type_errors([&] { sum += file.get_float_array(key).size(); });
  }
  for (const mkv::GgufTensorInfo& t : file.tensors()) {
    sum += static_cast<uint64_t>(t.n_elements()) + static_cast<uint64_t>(t.rows());
    sum += &file.tensor(t.name) == &t;
    for (std::size_t i = 0; i < t.nbytes; ++i) sum += t.data[i];
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const mkv::GgufFile file =
        mkv::GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz-input");
    volatile uint64_t sink = read_everything(file);
    (void)sink;
  } catch (const mkv::MkvError&) {
    // Refusing malformed input is the expected outcome for most inputs.
  }
  return 0;
}
