// libFuzzer target for the evaluation inputs a user writes or downloads, or a killed run leaves:
// RULER JSONL rows, LongBench JSONL rows with a dataset2prompt template, sweep files, and results
// files resumed with a --shard spec. Each must be read or refused with MkvError (never another
// exception or a crash); RULER rows that were read must come back unchanged when written and read
// again, LongBench prompts must format or be refused, and a resumed results file keeps its rows
// and the one appended after them. Input: one byte that chooses the reader, then (LongBench) a
// template line or (results) a shard line, then the file's bytes.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/longbench/longbench_eval.h"
#include "eval/results_store.h"
#include "eval/ruler/ruler_sample.h"
#include "fuzz/fuzz_input.h"
#include "sweep/sweep_spec.h"

namespace {

// A file of this process's own for the readers, which take paths; removed when done with. In
// /dev/shm where there is one: the results store fsyncs every row, which a disk makes slow.
struct ScratchFile {
  const std::filesystem::path path =
      (std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                 : std::filesystem::temp_directory_path()) /
      ("mkv_rows_fuzz_" + std::to_string(getpid()) + ".jsonl");
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

// A results file found on resume (a kill may have left half a line): it opens or is refused, and
// an opened one keeps every row it loaded and the row appended after them, when opened again.
void results_file(const std::string& shard, const std::string& bytes) {
  try {
    (void)mkv::eval::ShardSpec::parse(shard);
  } catch (const mkv::MkvError&) {
  }
  const ScratchFile scratch;
  mkv::write_text_file(scratch.path, bytes);
  std::ostringstream log;
  std::vector<nlohmann::json> rows;
  int64_t next_index = 0;
  try {
    mkv::eval::ResultsStore store(scratch.path, log);
    rows = store.rows();
    for (const auto& row : rows) next_index = std::max(next_index, row.at("index").get<int64_t>() + 1);
    if (next_index == std::numeric_limits<int64_t>::max()) return;
    try {
      store.require_field("pred", "string");
    } catch (const mkv::MkvError&) {
    }
    store.append({{"index", next_index}, {"pred", "appended"}});
  } catch (const mkv::MkvError&) {
    return;
  }
  mkv::eval::ResultsStore again(scratch.path, log);  // must not throw
  mkv::fuzz::require(again.size() == rows.size() + 1, "a resumed results file lost or gained rows");
  for (std::size_t i = 0; i < rows.size(); ++i)
    mkv::fuzz::require(again.rows()[i] == rows[i], "a resumed results file changed a row");
  mkv::fuzz::require(again.done(next_index), "the appended row is not in the results file");
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
  switch (in.byte() % 4) {
    case 0: ruler_rows(std::string(in.rest())); break;
    case 1: {
      const std::string templ(in.until('\n'));
      longbench_rows(templ, std::string(in.rest()));
      break;
    }
    case 2: sweep_file(std::string(in.rest())); break;
    default: {
      const std::string shard(in.until('\n'));
      results_file(shard, std::string(in.rest()));
      break;
    }
  }
  return 0;
}
