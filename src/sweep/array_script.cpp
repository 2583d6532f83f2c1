#include "sweep/array_script.h"

#include <fmt/format.h>

#include <algorithm>

#include "sweep/memory_estimate.h"
#include "sweep/task_record.h"

namespace mkv::sweep {
namespace fs = std::filesystem;

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:=,+-@").find(c) != std::string_view::npos;
  });
  if (safe) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

fs::path script_path(const SweepSpec& spec) { return spec.output / "slurm" / (spec.name + ".sbatch"); }

std::string array_option(const SweepSpec& spec, const std::vector<int>& indices) {
  std::string option = index_ranges(indices);
  if (spec.slurm.max_running > 0) option += fmt::format("%{}", spec.slurm.max_running);
  return option;
}

std::vector<std::string> sbatch_command(const SweepSpec& spec, const std::vector<int>& indices) {
  return {"sbatch", "--parsable", "--array=" + array_option(spec, indices), script_path(spec).string()};
}

namespace {

std::string describe(const SweepSpec& spec, const SweepTask& t) {
  return fmt::format("{} · {} · shard {}/{}", spec.models[t.model].stem,
                     t.setting.press.is_full() ? std::string("full") : fmt::format("{} L={}", t.setting.spec, t.setting.budget),
                     t.shard, t.shards);
}

std::string header(const SweepSpec& spec, const std::vector<SweepTask>& tasks) {
  const MemoryEstimate e = estimate_task_memory(spec);
  const int64_t mem = task_memory_mib(spec);
  constexpr double kMiB = 1 << 20;
  std::string out = "#!/bin/bash\n";
  out += fmt::format("# momentkv sweep '{}': {} array tasks, one per (model, press, budget, shard).\n", spec.name,
                     tasks.size());
  out += fmt::format("# Written by `momentkv sweep submit {}`; task i runs `momentkv eval` into its own folder.\n",
                     spec.file.string());
  out += "# Predictions are appended per sample: a resubmitted or requeued task resumes where it stopped,\n"
         "# a finished task exits at once. Without Slurm: SLURM_ARRAY_TASK_ID=i bash THIS_FILE\n";
  if (spec.slurm.mem_mib)
    out += fmt::format("# Memory per task: {} MiB (slurm.mem).\n", mem);
  else
    out += fmt::format("# Memory per task: {} MiB, estimated: weights {:.0f} MiB + KV cache {:.0f} MiB ({} tokens) +\n"
                       "# activations {:.0f} MiB + overhead {:.0f} MiB, plus 25% (set slurm.mem to override).\n",
                       mem, e.weights / kMiB, e.kv_cache / kMiB, e.prompt_tokens, e.activations / kMiB,
                       e.overhead / kMiB);
  const SlurmOptions& s = spec.slurm;
  out += fmt::format("#SBATCH --job-name={}\n", spec.name);
  out += fmt::format("#SBATCH --array={}\n", array_option(spec, [&] {
                       std::vector<int> all(tasks.size());
                       for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
                       return all;
                     }()));
  out += fmt::format("#SBATCH --output={}/%x_%A_%a.out\n", s.logs.string());
  out += "#SBATCH --open-mode=append\n#SBATCH --requeue\n";
  out += fmt::format("#SBATCH --cpus-per-task={}\n#SBATCH --mem={}M\n", s.cpus_per_task, mem);
  if (!s.partition.empty()) out += fmt::format("#SBATCH --partition={}\n", s.partition);
  if (!s.time.empty()) out += fmt::format("#SBATCH --time={}\n", s.time);
  if (!s.account.empty()) out += fmt::format("#SBATCH --account={}\n", s.account);
  if (!s.qos.empty()) out += fmt::format("#SBATCH --qos={}\n", s.qos);
  for (const std::string& e : s.extra) out += fmt::format("#SBATCH {}\n", e);
  return out;
}

}  // namespace

std::string array_script(const SweepSpec& spec, const std::vector<SweepTask>& tasks, const fs::path& binary) {
  const int last = static_cast<int>(tasks.size()) - 1;
  std::string out = header(spec, tasks);
  out += "set -uo pipefail\n";
  out += fmt::format("momentkv={}\n", shell_quote(binary.string()));
  out += fmt::format("task=\"${{SLURM_ARRAY_TASK_ID:?set SLURM_ARRAY_TASK_ID to a task index (0-{}) to run one task without Slurm}}\"\n",
                     last);
  out += "case \"$task\" in\n";
  for (const SweepTask& t : tasks) {
    out += fmt::format("  # {}\n", describe(spec, t));
    out += fmt::format("  {}) dir={}\n     args=(", t.index, shell_quote(t.dir.string()));
    const std::vector<std::string> args = eval_arguments(spec, t);
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i + 1 == args.size()) {
        out += "\"$dir\"";  // -o's value is the task folder
        break;
      }
      out += shell_quote(args[i]) + ' ';
    }
    out += ") ;;\n";
  }
  out += fmt::format("  *) echo \"momentkv sweep '{}': no task $task (tasks 0-{})\" >&2; exit 2 ;;\n", spec.name, last);
  out += "esac\n";
  out += fmt::format("logs={}\n", shell_quote(spec.slurm.logs.string()));
  out += fmt::format(
      "if [ -n \"${{SLURM_ARRAY_JOB_ID:-}}\" ]; then job=\"${{SLURM_ARRAY_JOB_ID}}_$task\"; log=\"$logs/{}_$job.out\"; "
      "else job=\"\"; log=\"\"; fi\n",
      spec.name);
  out += fmt::format(
      "mark() {{  # mark STATE EXIT: the task record ({}), replaced whole\n"
      "  printf '{{\"state\":\"%s\",\"exit\":%s,\"job\":\"%s\",\"host\":\"%s\",\"pid\":%d,\"log\":\"%s\",\"time\":\"%s\"}}\\n' \\\n"
      "    \"$1\" \"$2\" \"$job\" \"$(hostname -s)\" \"$$\" \"$log\" \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\" >\"$dir/{}.tmp\" &&\n"
      "    mv -f \"$dir/{}.tmp\" \"$dir/{}\"\n"
      "}}\n",
      kTaskRecordFile, kTaskRecordFile, kTaskRecordFile, kTaskRecordFile);
  out += "mkdir -p \"$dir\" || exit 1\n";
  out += fmt::format("if grep -qs '\"state\":\"done\"' \"$dir/{}\"; then echo \"task $task: already done ($dir)\"; exit 0; fi\n",
                     kTaskRecordFile);
  out += "# One run per task folder: the lock is held by this shell and the eval it starts.\n";
  out += "command -v flock >/dev/null || { echo \"task $task: flock (util-linux) not found on $(hostname -s)\" >&2; exit 1; }\n";
  out += fmt::format("exec 9>>\"$dir/{}\"\n", kTaskLockFile);
  out += fmt::format("if ! flock -w 30 9; then echo \"task $task: another run holds $dir/{}; leaving the task to it\" >&2; exit 0; fi\n",
                     kTaskLockFile);
  out += "echo \"task $task on $(hostname -s) (job ${job:-none}): $momentkv ${args[*]}\"\n";
  out += "mark running null\n";
  out += "trap 'mark failed 143; exit 143' TERM\n";
  out += "\"$momentkv\" \"${args[@]}\"\n";
  out += "rc=$?\n";
  out += "if [ \"$rc\" -eq 0 ]; then mark done 0; else mark failed \"$rc\"; fi\n";
  out += "exit \"$rc\"\n";
  return out;
}

}  // namespace mkv::sweep
