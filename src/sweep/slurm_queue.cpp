#include "sweep/slurm_queue.h"

#include <fmt/format.h>

#include <charconv>

#include "core/text_file.h"
#include "sweep/subprocess.h"

namespace mkv::sweep {
namespace {

// squeue and sacct retry an unreachable controller for about MessageTimeout (10 s by default) per
// call; past this the snapshot says the queue did not answer instead of hanging `sweep status`.
constexpr std::chrono::seconds kSlurmQueryLimit(60);

std::vector<std::string> split(std::string_view line, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = line.find(sep, start);
    out.emplace_back(line.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string first_line(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "no output" : line;
}

bool is_active(const std::string& state) { return state == "RUNNING" || state == "COMPLETING" || state == "CONFIGURING"; }

}  // namespace

std::optional<QueueEntry> QueueSnapshot::find(int task, const std::set<std::string>& jobs) const {
  std::optional<QueueEntry> found;
  for (const QueueEntry& e : entries) {
    if (e.task != task || (!jobs.empty() && !jobs.count(e.array_job))) continue;
    if (!found || (is_active(e.state) && !is_active(found->state))) found = e;
  }
  return found;
}

QueueSnapshot parse_squeue(const std::string& text) {
  QueueSnapshot s;
  s.available = true;
  for (const TextLine& line : split_lines(text)) {
    const std::vector<std::string> cells = split(line.text, '|');
    if (cells.size() < 3) continue;
    QueueEntry e;
    e.array_job = cells[0];
    int task = -1;
    const auto [end, error] = std::from_chars(cells[1].data(), cells[1].data() + cells[1].size(), task);
    if (error != std::errc() || end != cells[1].data() + cells[1].size() || task < 0) continue;  // N/A: not an array task
    e.task = task;
    e.state = cells[2];
    if (cells.size() > 3) e.reason = cells[3];
    s.entries.push_back(std::move(e));
  }
  return s;
}

QueueSnapshot query_queue(const std::string& job_name) {
  if (!find_program("squeue")) return {false, "squeue not found: queue states unknown", {}};
  const CommandResult r =
      run_command({"squeue", "-h", "-r", "--me", "--name=" + job_name, "-o", "%F|%K|%T|%r"}, kSlurmQueryLimit);
  if (r.timed_out)
    return {false, fmt::format("squeue did not answer within {} s: queue states unknown", kSlurmQueryLimit.count()), {}};
  if (r.exit_code != 0)
    return {false, fmt::format("squeue failed (exit {}): {}: queue states unknown", r.exit_code, first_line(r.err)), {}};
  return parse_squeue(r.out);
}

AccountingSnapshot parse_sacct(const std::string& text) {
  AccountingSnapshot s;
  s.available = true;
  for (const TextLine& line : split_lines(text)) {
    const std::vector<std::string> cells = split(line.text, '|');
    if (cells.size() < 2 || cells[0].empty()) continue;
    s.states[cells[0]] = cells[1].substr(0, cells[1].find(' '));  // "CANCELLED by 0" → CANCELLED
  }
  return s;
}

AccountingSnapshot query_accounting(const std::set<std::string>& array_jobs) {
  if (array_jobs.empty()) return {false, "", {}};
  if (!find_program("sacct")) return {false, "sacct not found: how failed jobs ended is unknown", {}};
  const CommandResult r =
      run_command({"sacct", "-n", "-P", "-X", "-j", fmt::format("{}", fmt::join(array_jobs, ",")), "-o", "JobID,State"},
                  kSlurmQueryLimit);
  if (r.timed_out)
    return {false, fmt::format("sacct did not answer within {} s: how failed jobs ended is unknown", kSlurmQueryLimit.count()),
            {}};
  if (r.exit_code != 0 || r.out.empty())
    return {false, fmt::format("sacct gave nothing ({})", first_line(r.err.empty() ? r.out : r.err)), {}};
  return parse_sacct(r.out);
}

}  // namespace mkv::sweep
