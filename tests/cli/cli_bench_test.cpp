// momentkv bench end to end on a tiny random model: well-formed markdown / JSON / CSV output and
// one-line errors for bad flags.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "cli/cli_runner.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using test::expect_one_line_error;
using test::run_momentkv;
using BenchRun = test::CliResult;

// A tiny random model, written once per test binary run.
const std::string& tiny_model() {
  static const std::string path = [] {
    const auto p = (test::temp_dir() / "bench_tiny_llama.gguf").string();
    const BenchRun r = run_momentkv("make-model --shape tiny-llama --type Q8_0 -o " + p);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return path;
}


TEST(CliBench, MarkdownTableHasOneRowPerTest) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() + " -p 16 -n 4 -d 0,8 -r 2 -t 1 --no-probe");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(in, line))
    if (line.rfind("| ", 0) == 0) rows.push_back(line);
  ASSERT_EQ(rows.size(), 2u + 4u) << r.out;  // header, separator, pp16, tg4, pp16 @ d8, tg4 @ d8
  EXPECT_NE(rows[0].find("| model | size | params | backend | threads | test | t/s |"), std::string::npos);
  EXPECT_NE(rows[2].find("| pp16 |"), std::string::npos) << rows[2];
  EXPECT_NE(rows[3].find("| tg4 |"), std::string::npos) << rows[3];
  EXPECT_NE(rows[5].find("| tg4 @ d8 |"), std::string::npos) << rows[5];
  EXPECT_NE(rows[3].find(" ± "), std::string::npos);
  EXPECT_NE(r.out.find("bytes per row"), std::string::npos);
  EXPECT_NE(r.out.find("peak RSS"), std::string::npos);
}

TEST(CliBench, ProgressNamesTheDepthPrefillAndEveryRepetition) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() +
                                  " -p 0 -n 2 -d 16 -r 2 -t 1 --no-probe --press snapkv --kv-budget 8 --progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);)
    if (line.find("tg2 @ d16 snapkv") != std::string::npos) lines.push_back(line);
  // The test line, the depth prefill before and after, and the two repetitions.
  ASSERT_EQ(lines.size(), 5u) << r.err;
  EXPECT_NE(lines[1].find(": prefilling the depth: 16 tokens"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(": depth prefilled in "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("(compression pass "), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find(": repetition 1/2"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find(": repetition 2/2"), std::string::npos) << lines[4];
  // Without --progress stderr stays quiet.
  const BenchRun quiet = run_momentkv("bench -m " + tiny_model() + " -p 0 -n 2 -d 16 -r 2 -t 1 --no-probe");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("repetition"), std::string::npos) << quiet.err;
}

TEST(CliBench, ProbesAroundEveryRepetitionWithEachThreadCount) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() + " -p 0 -n 2 -r 2 -t 1,2 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["bandwidth_probe"].size(), 2u);
  ASSERT_EQ(j["results"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& probe = j["bandwidth_probe"][i];
    const auto& fma = j["fma_probe"][i];
    const auto& row = j["results"][i];
    EXPECT_EQ(probe["threads"].get<int>(), static_cast<int>(i) + 1);
    EXPECT_EQ(row["threads"], probe["threads"]);
    EXPECT_EQ(fma["threads"], probe["threads"]);
    ASSERT_EQ(probe["passes_gbs"].size(), 4u);  // one pass before and one after each of 2 repetitions
    ASSERT_EQ(fma["passes_gflops"].size(), 4u);
    EXPECT_DOUBLE_EQ(row["probe_gbs"].get<double>(), probe["best_gbs"].get<double>());
    EXPECT_DOUBLE_EQ(row["fma_peak_gflops"].get<double>(), fma["best_gflops"].get<double>());
    // Each repetition's rate over the better of the passes on its two sides; the median of two
    // is their mean.
    auto paired = [&](const char* per_token, const nlohmann::json& passes) {
      double sum = 0.0;
      for (int rep = 0; rep < 2; ++rep) {
        const double rate = row[per_token].get<double>() * row["samples_ts"][rep].get<double>() / 1e9;
        sum += rate / std::max(passes[2 * rep].get<double>(), passes[2 * rep + 1].get<double>());
      }
      return sum / 2;
    };
    EXPECT_NEAR(row["bandwidth_fraction"].get<double>(), paired("bytes_per_token", probe["passes_gbs"]), 1e-9);
    EXPECT_NEAR(row["flops_fraction"].get<double>(), paired("flops_per_token", fma["passes_gflops"]), 1e-9);
  }
}

TEST(CliBench, JsonWithAPressAtDepth) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() +
                                  " -p 0 -n 4 -d 32 -r 2 -t 1 -o json --press snapkv --kv-budget 16 --fast -ctk f16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["bandwidth_probe"].size(), 1u);
  EXPECT_GT(j["bandwidth_probe"][0]["best_gbs"].get<double>(), 0.0);
  EXPECT_GT(j["peak_rss_bytes"].get<double>(), 0.0);
  ASSERT_EQ(j["results"].size(), 2u);  // tg4 @ d32 with the full cache, then with the press
  for (const auto& row : j["results"]) {
    EXPECT_EQ(row["test"], "tg4 @ d32");
    EXPECT_EQ(row["samples_ts"].size(), 2u);
    EXPECT_GT(row["avg_ts"].get<double>(), 0.0);
    EXPECT_GT(row["gbs"].get<double>(), 0.0);
    EXPECT_GT(row["kv_row_bytes"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["results"][0]["press"], "");
  EXPECT_NE(j["results"][1]["press"], "");
  // The press keeps at most the budget per head (+ the decoded tokens it may not evict yet).
  EXPECT_LT(j["results"][1]["kv_rows_held"].get<int64_t>(), j["results"][0]["kv_rows_held"].get<int64_t>());
  EXPECT_NE(j["backend"].get<std::string>().find("int8"), std::string::npos);
}

TEST(CliBench, NcAbTimesBothSettingsOnOneCache) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() +
                                  " -p 0 -n 4 -d 48 -r 3 -t 1 -o json --no-probe --press momentkv --kv-budget 16 --nc-ab");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 3u);  // full cache, MomentKV (NC on), its NC-off twin
  const auto& on = j["results"][1];
  const auto& off = j["results"][2];
  EXPECT_EQ(on["companion"], "");
  EXPECT_EQ(off["companion"], "NC off (same cache)");
  EXPECT_EQ(on["samples_ts"].size(), 3u);
  EXPECT_EQ(off["samples_ts"].size(), 3u);
  EXPECT_NE(off["press"].get<std::string>().find("NC off"), std::string::npos);
  EXPECT_EQ(on["kv_rows_held"], off["kv_rows_held"]);  // one cache for both

  // A press without NC gets no twin; the markdown names the NC cost.
  const BenchRun plain = run_momentkv("bench -m " + tiny_model() +
                                      " -p 0 -n 4 -d 48 -r 2 -t 1 -o json --no-probe --press snapkv --kv-budget 16 --nc-ab");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["results"].size(), 2u);
  const BenchRun md = run_momentkv("bench -m " + tiny_model() +
                                   " -p 0 -n 4 -d 48 -r 2 -t 1 --no-probe --press momentkv --kv-budget 16 --nc-ab");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("NC adds"), std::string::npos) << md.out;
}

TEST(CliBench, Depth0AbTimesDepthZeroBesideThePressRow) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() +
                                  " -p 0 -n 4 -d 48 -r 3 -t 1 -o json --no-probe --press momentkv --kv-budget 16 --nc-ab --depth0-ab");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);  // full cache (no companion), MomentKV, its NC-off and depth-0 companions
  const auto& press = j["results"][1];
  const auto& depth0 = j["results"][3];
  EXPECT_EQ(j["results"][0]["companion"], "");
  EXPECT_EQ(j["results"][2]["companion"], "NC off (same cache)");
  EXPECT_EQ(depth0["companion"], "depth 0 (same run)");
  EXPECT_EQ(depth0["samples_ts"].size(), 3u);
  // The depth-0 session holds only its own decoded tokens: 4 per KV head of every layer.
  EXPECT_LT(depth0["kv_rows_held"].get<int64_t>(), press["kv_rows_held"].get<int64_t>());
  EXPECT_EQ(depth0["kv_rows_held"].get<int64_t>() % 4, 0);
  EXPECT_LT(depth0["bytes_per_token"].get<double>(), press["bytes_per_token"].get<double>());
  const BenchRun md = run_momentkv("bench -m " + tiny_model() +
                                   " -p 0 -n 4 -d 48 -r 2 -t 1 --no-probe --press snapkv --kv-budget 16 --depth0-ab");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("decode speed vs depth 0"), std::string::npos) << md.out;
}

TEST(CliBench, CsvHasAHeaderAndOneLinePerTest) {
  const BenchRun r = run_momentkv("bench -m " + tiny_model() + " -p 8 -n 2 -r 1 -t 1 -o csv --no-probe");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
  EXPECT_EQ(r.out.rfind("model,size_bytes,params,backend,threads,test", 0), 0u);
}

TEST(CliBench, BadFlagsAreOneLineErrors) {
  expect_one_line_error(run_momentkv("bench -m " + tiny_model() + " -o xml"), "xml");
  expect_one_line_error(run_momentkv("bench -m " + tiny_model() + " -p 1,x"), "-p");
  expect_one_line_error(run_momentkv("bench -m " + tiny_model() + " -r 0"), "-r");
  expect_one_line_error(run_momentkv("bench -m " + tiny_model() + " -t 0"), "-t");
  expect_one_line_error(run_momentkv("bench -m /nonexistent/m.gguf"), "/nonexistent/m.gguf");
  expect_one_line_error(run_momentkv("bench -m " + tiny_model() + " --kv-budget 64"), "--press");
  expect_one_line_error(run_momentkv("bench -m " + tiny_model() + " -d 8 --press nosuchpress"), "nosuchpress");
  expect_one_line_error(run_momentkv("bench --no-such-flag"), "--no-such-flag");
}

}  // namespace
}  // namespace mkv
