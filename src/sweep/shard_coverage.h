// Before `momentkv report` merges result folders: every shard of a run must be counted once.
// Shards of one (model, press, budget, task) are summed by sample count (result_records.h), so
//   - the same shard i/n in two folders (a sweep copied, or run twice into two roots, both passed)
//     would count its samples twice, and
//   - shards of different splits (0/2 beside 1/3, or an unsharded run beside shards) overlap,
// both errors naming the two folders. A run with shards missing (a sweep still going, a task that
// failed) is merged with a warning that says which shards the score covers.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mkv::sweep {

// Warnings for incomplete shard sets; MkvError for duplicated or overlapping shards. Folders
// whose run.json has no "shard" field are not checked (results from elsewhere).
std::vector<std::string> check_shard_coverage(const std::vector<std::filesystem::path>& run_folders);

}  // namespace mkv::sweep
