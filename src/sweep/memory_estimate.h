// Memory per array task (Slurm --mem) when the sweep file does not set slurm.mem: what one eval
// process holds at its peak, for the largest model of the sweep.
//   weights      the GGUF file (mapped; the page cache a job touches counts against its memory)
//   kv cache     the whole prompt before compression (prefill keeps every token until the press
//                runs; with compress_chunks only the largest budget plus one -ub chunk), all layers
//                and KV heads, keys and values, in cache_type
//   activations  one -ub chunk through a layer (x, q, k, v, attention out, FFN gate/up) and logits
//   overhead     512 MiB (runtime, tokenizer, the samples held in memory, page-cache slack)
// total = (sum) × 1.25, rounded up to 256 MiB. A starting point: measure one task (sacct's MaxRSS
// or /usr/bin/time -v) and set slurm.mem for long sweeps.
#pragma once

#include <cstdint>

#include "sweep/sweep_spec.h"

namespace mkv::sweep {

struct MemoryEstimate {
  uint64_t weights = 0, kv_cache = 0, activations = 0, overhead = 0;  // bytes, for the largest model
  int64_t prompt_tokens = 0;  // the longest prompt assumed
  int64_t total_mib = 0;      // what --mem gets
};

MemoryEstimate estimate_task_memory(const SweepSpec& spec);
// slurm.mem when given, else the estimate's total.
int64_t task_memory_mib(const SweepSpec& spec);

}  // namespace mkv::sweep
