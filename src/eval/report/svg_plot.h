// A dependency-free SVG line plot: one polyline with point markers per series, axes with ticks
// and grid, axis labels, title and a legend on the right. Output is a standalone SVG 1.1 document
// (opens in browsers, converts with rsvg/ImageMagick).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mkv::eval::report {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in the given order
  bool reference = false;  // drawn as a dashed horizontal line at the first point's y (e.g. full cache)
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
  bool log2_x = false;  // budgets: ticks at powers of two
};

std::string render_svg(const LinePlot& plot);

// Tick values covering [lo, hi] with a 1/2/5·10^k step (about `target` ticks).
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace mkv::eval::report
