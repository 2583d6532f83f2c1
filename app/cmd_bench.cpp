// momentkv bench: llama-bench-style throughput table (pp / tg tests, optionally at a depth and
// with a press), plus achieved GB/s and GFLOP/s against a measured read-bandwidth roofline.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

#include "commands.h"
#include "quantity_text.h"
#include "core/error.h"
#include "core/int_list.h"
#include "core/threading.h"
#include "engine/bench.h"
#include "kv/kv_cache.h"
#include "kv/press_catalog.h"
#include "kv/press_config.h"
#include "ops/bandwidth_probe.h"
#include "ops/cpu_features.h"
#include "ops/fma_probe.h"
#include "ops/matmul_int8.h"

namespace mkv::cli {
namespace {

// "CPU " and the kernel variant in use (cpu_features.h: CPUID or MOMENTKV_CPU).
std::string backend_name() {
  std::string b = "CPU " + std::string(cpu_variant_label(cpu_variant()));
  if (matmul_precision() == MatmulPrecision::Fast) b += " int8";
  return b;
}

// One pass of each probe (after its warm-up pass), taken right before or right after a repetition.
struct ProbeReading {
  double gbs = 0.0;
  double gflops = 0.0;
};

struct Row {
  std::string model;
  ModelFootprint footprint;
  int threads;
  std::string press;
  BenchResult result;
  // Two per repetition of this row's test (before, after), in order; empty without probes.
  // Companions (--nc-ab, --depth0-ab) ran inside the same repetitions: same readings.
  std::vector<ProbeReading> readings;

  // The best pass of a probe around the test (0: none).
  double best(double ProbeReading::*field) const {
    double b = 0.0;
    for (const ProbeReading& p : readings) b = std::max(b, p.*field);
    return b;
  }
  // The share of a probe's limit reached, paired per repetition (see paired_fraction).
  double fraction(double ProbeReading::*field, double per_token) const {
    std::vector<double> rates, limits;
    for (double tps : result.tokens_per_s) rates.push_back(per_token * tps / 1e9);
    for (const ProbeReading& p : readings) limits.push_back(p.*field);
    return paired_fraction(rates, limits);
  }
  double bandwidth_fraction() const { return fraction(&ProbeReading::gbs, result.bytes_per_token); }
  double flops_fraction() const { return fraction(&ProbeReading::gflops, result.flops_per_token); }
};

// What one bench run measured: the rows, every probe pass, and the process's memory.
struct BenchRun {
  std::vector<Row> rows;
  std::map<int, std::vector<double>> probe_passes, fma_passes;  // thread count -> every pass
  std::size_t probe_bytes = 0;  // the bandwidth probe's buffer (0: no probe)
  std::size_t rss = 0;          // peak RSS without the probe's buffer
  std::map<std::string, PageResidency> weights;  // model file name -> its image's pages after its tests
};

std::string test_label(const Row& r) {
  std::string s = r.result.test.name();
  if (!r.press.empty()) s += " [" + r.press + "]";
  return s;
}

// Loads each model and runs every test at every thread count, press and depth, reading the
// probes around every repetition.
BenchRun run_tests(const BenchOptions& o, const std::vector<std::string>& models, const std::vector<int>& prompts,
                   const std::vector<int>& gens, const std::vector<int>& depths, const std::vector<int>& threads) {
  cpu_variant();  // a bad MOMENTKV_CPU fails here, before any model is loaded
  // Rows without a press, then one set per press (the comparison at depth).
  std::vector<PressConfig> presses = {PressConfig()};
  for (const auto& p : o.presses) presses.push_back(p);

  BenchRun run;
  std::vector<Row>& rows = run.rows;
  // The probe's buffer is touched once, here, and read right before and right after every
  // repetition, so that each repetition's share of the bandwidth is measured seconds from it
  // (a shared host's bandwidth drifts over a day, and within minutes).
  std::unique_ptr<BandwidthProbe> probe;
  if (!o.no_probe) probe = std::make_unique<BandwidthProbe>();
  auto& probe_passes = run.probe_passes;
  auto& fma_passes = run.fma_passes;
  auto probe_now = [&](int t) {
    const double gbs = probe->passes_gbs(1).front(), gflops = fma_probe_passes(1).front();
    probe_passes[t].push_back(gbs);
    fma_passes[t].push_back(gflops);
    return ProbeReading{gbs, gflops};
  };
  for (const auto& path : models) {
    ModelOptions mo;
    mo.model_path = path;
    mo.ubatch = o.ubatch;
    mo.cache_type = o.cache_type;
    mo.no_mmap = o.no_mmap;
    mo.precision = o.precision;
    mo.threads = threads.front();
    LoadedModel m = load_model(mo);
    if (o.mlock && mlockall(MCL_CURRENT) != 0)
      fmt::print(stderr, "warning: mlockall failed (raise ulimit -l); continuing without locked memory\n");
    const ModelFootprint fp = model_footprint(*m.file);
    const std::string name = std::filesystem::path(m.file->path()).filename().string();
    for (int t : threads) {
      set_num_threads(t);
      for (const PressConfig& press_config : presses)
        for (int d : depths) {
          const std::string press = press_config.is_full() ? "" : press_config.as_given();  // row label
          std::vector<BenchTest> tests;
          for (int p : prompts)
            if (p > 0 && press.empty()) tests.push_back({p, 0, d});
          for (int n : gens)
            if (n > 0 && (press.empty() || d > 0)) tests.push_back({0, n, d});
          for (const BenchTest& test : tests) {
            BenchConfig bc;
            bc.repetitions = o.repetitions;
            bc.ubatch = o.ubatch;
            bc.kv_storage = m.kv_storage;
            bc.press = press_config;
            bc.fresh_depth = o.fresh_depth;
            bc.nc_ab = o.nc_ab;
            bc.depth0_ab = o.depth0_ab && !press.empty();
            const std::string label = fmt::format("{} t={} {}{}", name, t, test.name(), press.empty() ? "" : " " + press);
            if (o.progress) {
              fmt::print(stderr, "bench: {}\n", label);
              bc.on_progress = [&label](const std::string& line) { fmt::print(stderr, "bench: {}: {}\n", label, line); };
            }
            std::vector<ProbeReading> readings;
            if (probe) bc.around_repetition = [&] { readings.push_back(probe_now(t)); };
            const BenchResult result = run_bench(*m.transformer, fp, test, bc);
            rows.push_back({name, fp, t, press, result, readings});
            for (const BenchResult& companion : result.companions)
              rows.push_back({name, fp, t, press + ", " + companion.companion, companion, readings});
          }
        }
    }
    run.weights[name] = page_residency(m.file->image().data(), m.file->image().size());
  }
  // The probe's buffer stays resident for the whole run: it is not the engine's memory.
  run.probe_bytes = probe ? probe->bytes() : 0;
  const std::size_t peak_rss = peak_rss_bytes();
  run.rss = peak_rss - std::min(run.probe_bytes, peak_rss);
  return run;
}

void print_json(const BenchRun& run, const BenchOptions& o) {
  const std::vector<Row>& rows = run.rows;
  nlohmann::json out;
  out["backend"] = backend_name();
  out["precision"] = o.precision;
  out["bandwidth_probe"] = nlohmann::json::array();
  for (const auto& [t, gbs] : run.probe_passes) {
    const PassSummary p = summarize_passes(gbs);
    out["bandwidth_probe"].push_back({{"best_gbs", p.best},
                                      {"median_gbs", p.median},
                                      {"bytes", run.probe_bytes},
                                      {"threads", t},
                                      {"passes_gbs", gbs}});
  }
  out["fma_probe"] = nlohmann::json::array();
  for (const auto& [t, gflops] : run.fma_passes) {
    const PassSummary f = summarize_passes(gflops);
    out["fma_probe"].push_back(
        {{"best_gflops", f.best}, {"median_gflops", f.median}, {"threads", t}, {"passes_gflops", gflops}});
  }
  out["peak_rss_bytes"] = run.rss;
  out["model_pages"] = nlohmann::json::array();
  for (const auto& [model, pages] : run.weights)
    out["model_pages"].push_back({{"model", model}, {"resident_bytes", pages.resident}, {"huge_page_bytes", pages.huge}});
  out["kv_budget"] = o.presses.empty() ? 0 : o.presses.front().budget()->tokens;
  for (const Row& r : rows) {
    const BenchResult& b = r.result;
    out["results"].push_back({{"model", r.model},
                              {"size_bytes", r.footprint.file_bytes},
                              {"params", r.footprint.params},
                              {"threads", r.threads},
                              {"test", b.test.name()},
                              {"press", r.press},
                              {"companion", r.result.companion},
                              {"n_prompt", b.test.n_prompt},
                              {"n_gen", b.test.n_gen},
                              {"depth", b.test.depth},
                              {"samples_ts", b.tokens_per_s},
                              {"avg_ts", b.mean_tps},
                              {"stddev_ts", b.std_tps},
                              {"bytes_per_token", b.bytes_per_token},
                              {"flops_per_token", b.flops_per_token},
                              {"gbs", b.gbs()},
                              {"gflops", b.gflops()},
                              {"bandwidth_fraction", r.bandwidth_fraction()},
                              {"probe_gbs", r.best(&ProbeReading::gbs)},
                              {"flops_fraction", r.flops_fraction()},
                              {"fma_peak_gflops", r.best(&ProbeReading::gflops)},
                              {"kv_row_bytes", b.kv_row_bytes},
                              {"kv_bytes_held", b.kv_bytes_held},
                              {"kv_rows_held", b.kv_rows_held},
                              {"depth_prefill_s", b.depth_prefill_s},
                              {"depth_compress_s", b.depth_compress_s}});
  }
  if (rows.empty()) out["results"] = nlohmann::json::array();
  fmt::print("{}\n", out.dump(2));
}

void print_csv(const BenchRun& run) {
  fmt::print("model,size_bytes,params,backend,threads,test,press,depth,avg_ts,stddev_ts,gbs,gflops,bandwidth_fraction,"
             "kv_row_bytes,kv_bytes_held,peak_rss_bytes,probe_gbs,flops_fraction,fma_peak_gflops\n");
  for (const Row& r : run.rows) {
    const BenchResult& b = r.result;
    fmt::print("{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.2f},{:.2f},{:.3f},{},{},{},{:.2f},{:.3f},{:.1f}\n", r.model,
               r.footprint.file_bytes, r.footprint.params, backend_name(), r.threads, b.test.name(), r.press,
               b.test.depth, b.mean_tps, b.std_tps, b.gbs(), b.gflops(),
               r.bandwidth_fraction(), b.kv_row_bytes, b.kv_bytes_held, run.rss, r.best(&ProbeReading::gbs),
               r.flops_fraction(), r.best(&ProbeReading::gflops));
  }
}

void print_markdown(const BenchRun& run, const BenchOptions& o) {
  const std::vector<Row>& rows = run.rows;
  fmt::print("| model | size | params | backend | threads | test | t/s | GB/s | GFLOP/s | KV held |\n");
  fmt::print("| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    const BenchResult& b = r.result;
    const bool probed = !r.readings.empty();
    const std::string frac = probed ? fmt::format(" ({:.0f}%)", 100.0 * r.bandwidth_fraction()) : "";
    const std::string flops_frac = probed ? fmt::format(" ({:.0f}%)", 100.0 * r.flops_fraction()) : "";
    fmt::print("| {} | {} | {} | {} | {} | {} | {:.2f} ± {:.2f} | {:.2f}{} | {:.1f}{} | {} |\n", r.model,
               size_text(static_cast<double>(r.footprint.file_bytes)), params_text(static_cast<double>(r.footprint.params)),
               backend_name(), r.threads, test_label(r), b.mean_tps, b.std_tps, b.gbs(), frac, b.gflops(), flops_frac,
               size_text(static_cast<double>(b.kv_bytes_held)));
  }
  fmt::print("\n");
  for (const auto& [t, gbs] : run.probe_passes) {
    const PassSummary p = summarize_passes(gbs), f = summarize_passes(run.fma_passes.at(t));
    fmt::print("{} thread{}, {} passes of each probe around the repetitions: read bandwidth (STREAM-like, {}) best {:.2f} GB/s, "
               "median {:.2f}; FP32 FMA peak best {:.1f} GFLOP/s, median {:.1f}\n",
               t, t == 1 ? "" : "s", gbs.size(), size_text(static_cast<double>(run.probe_bytes)), p.best, p.median, f.best,
               f.median);
  }
  if (run.probe_bytes > 0)
    fmt::print("GB/s = (weight + KV bytes read per token) x t/s, GFLOP/s = (matrix + attention FLOPs per token) x t/s; "
               "(%) = median over repetitions of the repetition's rate over the better probe pass right before or "
               "after it\n");
  for (const Row& r : rows)
    for (const BenchResult& companion : r.result.companions) {
      // Per repetition, the test pass against the companion pass timed beside it.
      // Depth 0: the test's speed relative to it; NC off: the test's extra time relative to it.
      const bool depth0 = companion.depth0_pass();
      std::vector<double> pct;
      for (std::size_t i = 0; i < r.result.tokens_per_s.size(); ++i) {
        const double test_tps = r.result.tokens_per_s[i], companion_tps = companion.tokens_per_s[i];
        pct.push_back(100.0 * (depth0 ? test_tps / companion_tps : companion_tps / test_tps) - 100.0);
      }
      const auto [mean, sd] = mean_and_std(pct);
      if (depth0)
        fmt::print("{}: decode speed vs depth 0 {:+.1f} ± {:.1f}% ({} interleaved pairs with a depth-0 full-cache session)\n",
                   test_label(r), mean, sd, pct.size());
      else
        fmt::print("{}: NC adds {:+.1f} ± {:.1f}% to decode time ({} interleaved NC on/off pairs on one compressed cache)\n",
                   test_label(r), mean, sd, pct.size());
    }
  for (const Row& r : rows)
    if (!r.press.empty() && r.result.depth_prefill_s > 0 && r.result.companion.empty())
      fmt::print("{}: compression after the {}-token prefill took {:.3f} s, {:.1f}% of that prefill ({:.1f} s)\n",
                 test_label(r), r.result.test.depth, r.result.depth_compress_s,
                 100.0 * r.result.depth_compress_s / r.result.depth_prefill_s, r.result.depth_prefill_s);
  if (!rows.empty())
    fmt::print("KV cache: {} bytes per row (one token of one KV head: key + value + position), {}; peak RSS {}\n",
               rows.front().result.kv_row_bytes, o.cache_type, size_text(static_cast<double>(run.rss)));
  for (const auto& [model, pages] : run.weights)
    if (pages.resident > 0)
      fmt::print("{}: {} of the model resident, {:.0f}% of it in 2 MiB pages (mapped: as the page cache holds the "
                 "file; --no-mmap asks for all)\n",
                 model, size_text(double(pages.resident)), 100.0 * double(pages.huge) / double(pages.resident));
  fmt::print("precision: {}{}\n", o.precision,
             o.precision == "fast" ? " (activations quantised to 8 bits for the decode matrix-vector products of quantised weights, "
                                                "rounded to fp16 for those of F16 weights, and to bf16 for every product of BF16 weights)" : "");
  fmt::print("{}\n", cpu_variant_summary());
}

}  // namespace

int run_bench_command(const BenchOptions& options) {
  BenchOptions o = options;
  o.precision = resolve_precision(o.precision, "fast");
  MKV_CHECK(o.output == "md" || o.output == "json" || o.output == "csv", "-o must be md, json or csv, got '{}'",
            o.output);
  MKV_CHECK(o.repetitions > 0, "-r must be positive, got {}", o.repetitions);
  MKV_CHECK(o.ubatch > 0, "-ub must be positive, got {}", o.ubatch);
  MKV_CHECK(kv_storage_from_name(o.cache_type).has_value(), "unsupported cache type '{}' (supported: f32, f16)",
            o.cache_type);
  const std::vector<int> prompts = parse_int_list(o.n_prompt, "-p", 0);
  const std::vector<int> gens = parse_int_list(o.n_gen, "-n", 0);
  const std::vector<int> depths = parse_int_list(o.depths, "-d", 0);
  const std::vector<int> threads = parse_int_list(o.threads, "-t", 1);
  const auto positive = [](int n) { return n > 0; };
  MKV_CHECK(std::any_of(prompts.begin(), prompts.end(), positive) || std::any_of(gens.begin(), gens.end(), positive),
            "-p and -n are all 0: no test to run");
  const bool at_depth = std::any_of(depths.begin(), depths.end(), positive);
  // The A/B flags time a press's decode after a depth prefill; without one they would time nothing.
  MKV_CHECK(!(o.nc_ab || o.depth0_ab) || (!o.presses.empty() && at_depth),
            "{} times a press's decode at depth: give --press SPEC --kv-budget L and -d D > 0",
            o.nc_ab ? "--nc-ab" : "--depth0-ab");
  std::vector<std::string> models = o.models;
  if (models.empty()) models.push_back("");
  for (const auto& m : models)
    MKV_CHECK(m.empty() || std::filesystem::exists(m), "cannot open model '{}': no such file", m);
  const BenchRun run = run_tests(o, models, prompts, gens, depths, threads);
  if (o.output == "json")
    print_json(run, o);
  else if (o.output == "csv")
    print_csv(run);
  else
    print_markdown(run, o);
  return 0;
}

}  // namespace mkv::cli
