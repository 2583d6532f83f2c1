// libFuzzer target for the evaluation inputs a user writes or downloads: RULER JSONL rows,
// LongBench JSONL rows with a dataset2prompt template, and sweep files. Each must be read or
// refused with MkvError (never another exception or a crash); RULER rows that were read must
// come back unchanged when written and read again, and LongBench prompts must format or be
// refused. Input: one byte that chooses the reader, then (LongBench) a template line, then the
// file's bytes.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/longbench/longbench_eval.h"
#include "eval/ruler/ruler_sample.h"
#include "fuzz/fuzz_input.h"
#include "sweep/sweep_spec.h"

namespace {

// A file of this process's own for the readers, which take paths; removed when done with.
struct ScratchFile {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("mkv_rows_fuzz_" + std::to_string(getpid()) + ".jsonl");
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

void ruler_rows(const std::string& bytes) {
  const ScratchFile scratch;
  const std::filesystem::path& path = scratch.path;
  mkv::write_text_file(path, bytes);
  std::vector<mkv::eval::ruler::RulerSample> samples;
  try {
    samples = mkv::eval::ruler::read_ruler_jsonl(path);
  } catch (const mkv::MkvError&) {
    return;
  }
  std::string written;
  for (const auto& s : samples) written += mkv::eval::ruler::to_jsonl_line(s) + "\n";
  mkv::write_text_file(path, written);
  const auto again = mkv::eval::ruler::read_ruler_jsonl(path);  // must not throw
  mkv::fuzz::require(again.size() == samples.size(), "RULER rows lost in a round trip");
  for (std::size_t i = 0; i < again.size(); ++i)
    mkv::fuzz::require(mkv::eval::ruler::to_jsonl_line(again[i]) == mkv::eval::ruler::to_jsonl_line(samples[i]),
            "a RULER row changed in a round trip");
}

void longbench_rows(const std::string& templ, const std::string& bytes) {
  const ScratchFile scratch;
  const std::filesystem::path& path = scratch.path;
  mkv::write_text_file(path, bytes);
  try {
    for (const auto& row : mkv::eval::read_longbench_jsonl(path)) {
      (void)mkv::eval::format_longbench_prompt(templ, row, "narrativeqa");
      (void)mkv::eval::format_longbench_prompt("{context}\n\nQuestion: {input}\nAnswer:", row, row.dataset);
    }
  } catch (const mkv::MkvError&) {
  }
}

void sweep_file(const std::string& bytes) {
  // Paths in a sweep file are opened; devices could block the reader, which is not this target's
  // question.
  if (bytes.find("/dev") != std::string::npos || bytes.find("/proc") != std::string::npos ||
      bytes.find("/sys") != std::string::npos)
    return;
  try {
    // Only names the file in messages and anchors relative paths: nothing is written there.
    (void)mkv::sweep::parse_sweep(bytes, std::filesystem::temp_directory_path() / "sweep.json");
  } catch (const mkv::MkvError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mkv::fuzz::FuzzInput in(data, size);
  switch (in.byte() % 3) {
    case 0: ruler_rows(std::string(in.rest())); break;
    case 1: {
      const std::string templ(in.until('\n'));
      longbench_rows(templ, std::string(in.rest()));
      break;
    }
    default: sweep_file(std::string(in.rest())); break;
  }
  return 0;
}
