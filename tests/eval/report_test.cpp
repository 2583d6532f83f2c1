#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "eval/metrics/longbench_metrics.h"
#include "eval/metrics/ruler_metrics.h"
#include "eval/report/result_records.h"
#include "eval/report/score_report.h"
#include "eval/report/svg_plot.h"
#include "support/test_support.h"

namespace mkv::eval::report {
namespace {

using Records = std::vector<ResultRecord>;

Records sample_records() {
  return {
      {"llama", "snapkv", 128, "niah", 60, 10},  {"llama", "snapkv", 256, "niah", 80, 10},
      {"llama", "snapkv", 128, "vt", 40, 10},    {"llama", "snapkv", 256, "vt", 70, 10},
      {"llama", "momentkv", 128, "niah", 75, 10}, {"llama", "momentkv", 256, "niah", 90, 10},
      {"llama", "momentkv", 128, "vt", 55, 10},  {"llama", "full", 0, "niah", 100, 10},
      {"llama", "full", 0, "vt", 95, 10},
  };
}

// Minimal well-formedness check: every tag closes in order, attributes are quoted.
void expect_well_formed_xml(const std::string& xml) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(/?)>|<\?xml[^>]*\?>)");
  size_t checked = 0;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    EXPECT_EQ(static_cast<size_t>(m.position()), xml.find('<', checked)) << "unparsable markup near " << checked;
    checked = m.position() + m.length();
    if (m[2].length() == 0) continue;  // <?xml ...?>
    if (m[1] == "/") {
      ASSERT_FALSE(open.empty());
      EXPECT_EQ(open.back(), m[2]);
      open.pop_back();
    } else if (m[4] != "/") {
      open.push_back(m[2]);
    }
  }
  EXPECT_TRUE(open.empty());
  EXPECT_EQ(xml.find('<', checked), std::string::npos);
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Report, MarkdownTable) {
  EXPECT_EQ(markdown_table(sample_records()),
            "| model | press | budget | niah | vt | avg |\n"
            "|---|---|---:|---:|---:|---:|\n"
            "| llama | full | full | 100.00 | 95.00 | 97.50 |\n"
            "| llama | momentkv | 128 | 75.00 | 55.00 | 65.00 |\n"
            "| llama | momentkv | 256 | 90.00 | – | – |\n"
            "| llama | snapkv | 128 | 60.00 | 40.00 | 50.00 |\n"
            "| llama | snapkv | 256 | 80.00 | 70.00 | 75.00 |\n");
}

TEST(Report, SvgSeriesPastEightRepeatColoursWithAnotherPatternAndMarker) {
  LinePlot plot;
  for (int s = 0; s < 10; ++s) plot.series.push_back({fmt::format("series {}", s), {{16.0, s}, {32.0, s + 1.0}}, false});
  const std::string svg = render_svg(plot);
  expect_well_formed_xml(svg);
  std::vector<std::string> groups;  // each series' <g> opening tag: stroke colour
  std::vector<std::string> patterns;  // each series' curve: dash pattern and marker
  for (std::size_t at = svg.find("<g class=\"series\""); at != std::string::npos;
       at = svg.find("<g class=\"series\"", at + 1)) {
    const std::size_t end = svg.find("</g>", at);
    const std::string g = svg.substr(at, end - at);
    groups.push_back(g.substr(0, g.find('>')));
    const std::string curve = g.substr(g.find("<polyline"));
    patterns.push_back(curve.substr(0, curve.find('>')) + (curve.find("<rect") != std::string::npos ? " square" : " circle"));
  }
  ASSERT_EQ(groups.size(), 10u);
  EXPECT_EQ(groups[8], groups[0]);  // colours repeat after 8
  EXPECT_EQ(groups[9], groups[1]);
  EXPECT_EQ(patterns[0].find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(patterns[8].find("stroke-dasharray=\"2 3\""), std::string::npos);
  EXPECT_NE(patterns[8].find("square"), std::string::npos);
  EXPECT_NE(patterns[0].find("circle"), std::string::npos);
  EXPECT_EQ(count(svg, "<rect x="), 1u + 2u * 3u);  // the background; series 8 and 9: 2 points + a legend marker
}

TEST(Report, SvgPlotIsWellFormedWithSeriesAxesAndLegend) {
  LinePlot plot = score_vs_budget_plot(sample_records(), "llama", "niah");
  ASSERT_EQ(plot.series.size(), 3u);
  plot.title += " <&>";
  const std::string svg = render_svg(plot);
  expect_well_formed_xml(svg);
  EXPECT_TRUE(svg.starts_with("<?xml"));
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("llama: niah vs KV budget &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 1u + 2u);  // axes + two press curves (full cache is a dashed line)
  EXPECT_EQ(count(svg, "<circle"), 4u + 2u);  // 4 points + the two curves' legend markers
  EXPECT_EQ(count(svg, "stroke-dasharray"), 2u);  // reference line + its legend swatch
  for (const char* text : {">snapkv<", ">momentkv<", ">full (full cache)<", ">128<", ">256<", "budget (tokens per KV head)"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;

  const auto mean = score_vs_budget_plot(sample_records(), "llama", "");
  for (const auto& s : mean.series)
    if (s.name == "momentkv") {
      EXPECT_EQ(s.points.size(), 1u);  // budget 256 lacks vt
    }

  // Look at it: write the SVG (and a PNG when ImageMagick is there) for a person to inspect.
  const auto dir = test::temp_dir();
  std::ofstream(dir / "plot.svg") << render_svg(score_vs_budget_plot(sample_records(), "llama", "niah"));
  if (std::system("command -v convert > /dev/null 2>&1") == 0) {
    const std::string command = "convert " + (dir / "plot.svg").string() + " " + (dir / "plot.png").string() + " 2>/dev/null";
    if (std::system(command.c_str()) == 0) {
      EXPECT_TRUE(std::filesystem::exists(dir / "plot.png"));
    }
  }
  if (const char* keep = std::getenv("MKV_KEEP_PLOT")) std::filesystem::copy(dir / "plot.svg", keep, std::filesystem::copy_options::overwrite_existing);
}

TEST(Report, NiceTicks) {
  EXPECT_EQ(nice_ticks(0, 100), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(nice_ticks(41, 89), (std::vector<double>{40, 50, 60, 70, 80, 90}));
}

TEST(Report, MergesFoldersAndShards) {
  const auto dir = test::temp_dir();
  // RULER run
  std::filesystem::create_directories(dir / "ruler");
  std::ofstream(dir / "ruler" / "run.json") << R"({"model": "llama", "press": "snapkv", "budget": 128})";
  std::ofstream(dir / "ruler" / "summary.csv") << "0,1,2\nTasks,niah_single_1,vt\nScore,95.2,80.0\nNulls,0/500,1/500\n";
  // LongBench run
  std::filesystem::create_directories(dir / "longbench");
  std::ofstream(dir / "longbench" / "run.json") << R"({"model": "llama", "press": "snapkv", "budget": 128})";
  std::ofstream(dir / "longbench" / "result.json") << R"({"hotpotqa": 40.5})";
  std::ofstream(dir / "longbench" / "hotpotqa.jsonl") << "{}\n{}\n";
  // two shards of one momentkv run in the common format
  append_scores(dir / "shard0", {{"llama", "momentkv", 128, "vt", 50, 2}});
  append_scores(dir / "shard1", {{"llama", "momentkv", 128, "vt", 100, 2}});

  const auto merged = merge_result_folders({dir / "ruler", dir / "longbench", dir / "shard0", dir / "shard1"});
  ASSERT_EQ(merged.size(), 4u);
  // sorted by model, task, press, budget
  EXPECT_EQ(merged[0].task, "hotpotqa");
  EXPECT_EQ(merged[0].n, 2);
  EXPECT_DOUBLE_EQ(merged[0].score, 40.5);
  EXPECT_EQ(merged[1].task, "niah_single_1");
  EXPECT_EQ(merged[1].n, 500);
  EXPECT_EQ(merged[2].press, "momentkv");
  EXPECT_DOUBLE_EQ(merged[2].score, 75.0);  // (50·2 + 100·2) / 4
  EXPECT_EQ(merged[2].n, 4);
  EXPECT_EQ(merged[3].press, "snapkv");
  EXPECT_DOUBLE_EQ(merged[3].score, 80.0);

  EXPECT_THROW(merge_records({{"m", "p", 1, "t", 1, 0}, {"m", "p", 1, "t", 2, 0}}), MkvError);
  EXPECT_THROW(read_result_folder(dir / "missing"), MkvError);
  std::filesystem::create_directories(dir / "empty");
  EXPECT_THROW(read_result_folder(dir / "empty"), MkvError);
}

}  // namespace
}  // namespace mkv::eval::report

namespace mkv::eval::report {
namespace {

// A RULER shard folder as `eval ruler --shard` leaves it: run.json, summary.csv (rounded, as RULER
// writes it) and pred/{task}.jsonl, with `hits` of the given indices answered right.
void write_ruler_shard(const std::filesystem::path& dir, const std::vector<int64_t>& indices, int hits) {
  std::filesystem::create_directories(dir / "pred");
  std::ofstream(dir / "run.json") << R"({"model": "llama", "press": "snapkv", "budget": 64})";
  std::vector<std::string> preds;
  std::vector<std::vector<std::string>> refs;
  std::ofstream rows(dir / "pred" / "niah_single_1.jsonl");
  for (std::size_t i = 0; i < indices.size(); ++i) {
    preds.push_back(int(i) < hits ? "the number is 1234" : "none");
    refs.push_back({"1234"});
    rows << nlohmann::json{{"index", indices[i]}, {"pred", preds.back()}, {"outputs", refs.back()}}.dump() << "\n";
  }
  const RulerTaskScore score = ruler_task_score("niah_single_1", preds, refs);
  std::ofstream(dir / "summary.csv") << fmt::format("Tasks,niah_single_1\nScore,{:.2f}\nNulls,0/{}\n", score.score,
                                                    score.n);
}

TEST(Report, RulerShardsMergeIntoTheUnshardedScoreExactly) {
  const auto dir = test::temp_dir();
  // 12 samples split 6/6 (index % 2): 2 and 3 right, 33.33 and 50.00 rounded; unsharded 5/12 = 41.67.
  write_ruler_shard(dir / "shard0", {0, 2, 4, 6, 8, 10}, 2);
  write_ruler_shard(dir / "shard1", {1, 3, 5, 7, 9, 11}, 3);
  const auto merged = merge_result_folders({dir / "shard0", dir / "shard1"});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].n, 12);
  EXPECT_EQ(merged[0].score, 41.67);
  EXPECT_EQ(fmt::format("{:.2f}", merged[0].score), "41.67");
  // The n-weighted mean of the rounded shard scores is what a merge without predictions gives.
  std::filesystem::remove_all(dir / "shard1" / "pred");
  const auto weighted = merge_result_folders({dir / "shard0", dir / "shard1"});
  EXPECT_EQ(fmt::format("{:.2f}", weighted[0].score), "41.66");
  // A predictions file that disagrees with its summary, and overlapping shards, are refused.
  write_ruler_shard(dir / "shard1", {1, 3, 5, 7, 9, 11}, 3);
  std::ofstream(dir / "shard1" / "pred" / "niah_single_1.jsonl", std::ios::app)
      << R"({"index": 13, "pred": "x", "outputs": ["1"]})" << "\n";
  EXPECT_THROW(merge_result_folders({dir / "shard0", dir / "shard1"}), MkvError);
  write_ruler_shard(dir / "shard1", {0, 3, 5, 7, 9, 11}, 3);
  EXPECT_THROW(merge_result_folders({dir / "shard0", dir / "shard1"}), MkvError);
  std::ofstream(dir / "shard1" / "pred" / "niah_single_1.jsonl") << "{\"index\": 1}\n";
  EXPECT_THROW(merge_result_folders({dir / "shard0", dir / "shard1"}), MkvError);
}

// A LongBench shard as `eval longbench --shard` leaves it: run.json, result.json (rounded) and the
// dataset's predictions, with indices.
void write_longbench_shard(const std::filesystem::path& dir, const std::vector<int64_t>& indices,
                           const std::vector<std::string>& preds) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.json") << R"({"model": "llama", "press": "snapkv", "budget": 64})";
  std::vector<LongBenchPrediction> rows;
  std::ofstream out(dir / "hotpotqa.jsonl");
  for (std::size_t i = 0; i < indices.size(); ++i) {
    rows.push_back({preds[i], {"the red fox jumped"}, {}, 0});
    out << nlohmann::json{{"index", indices[i]}, {"pred", preds[i]}, {"answers", rows.back().answers},
                          {"all_classes", nlohmann::json::array()}, {"length", 100}}.dump() << "\n";
  }
  std::ofstream(dir / "result.json") << nlohmann::json{{"hotpotqa", longbench_dataset_score("hotpotqa", rows)}}.dump();
}

TEST(Report, LongBenchShardsMergeIntoTheUnshardedScoreExactly) {
  const auto dir = test::temp_dir();
  const std::vector<std::string> preds = {"the red fox", "fox", "a red fox jumped high", "nothing", "the fox jumped",
                                          "red", "jumped the fox red"};
  write_longbench_shard(dir / "shard0", {0, 2, 4, 6}, {preds[0], preds[2], preds[4], preds[6]});
  write_longbench_shard(dir / "shard1", {1, 3, 5}, {preds[1], preds[3], preds[5]});
  std::vector<LongBenchPrediction> all;
  for (const std::string& p : preds) all.push_back({p, {"the red fox jumped"}, {}, 0});
  const auto merged = merge_result_folders({dir / "shard0", dir / "shard1"});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].n, 7);
  EXPECT_EQ(merged[0].score, longbench_dataset_score("hotpotqa", all));  // bit for bit
  // LongBench's own output has no index: its shards merge by the weighted mean, as before.
  std::ofstream(dir / "shard1" / "hotpotqa.jsonl") << "{\"pred\": \"fox\"}\n{}\n{}\n";
  const auto weighted = merge_result_folders({dir / "shard0", dir / "shard1"});
  EXPECT_EQ(weighted[0].n, 7);
  EXPECT_NE(weighted[0].score, merged[0].score);  // the mean of rounded shard scores is not the unsharded one
}

}  // namespace
}  // namespace mkv::eval::report
