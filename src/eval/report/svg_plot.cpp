#include "eval/report/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mkv::eval::report {
namespace {

// Okabe–Ito palette: distinguishable with common colour-vision deficiencies.
constexpr const char* kColors[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                   "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
// Past 8 series the colours repeat with another line pattern and marker (series s: colour s % 8,
// style s / 8), so that every series stays distinguishable without the legend's order.
constexpr const char* kDashes[] = {"", "2 3", "8 3 2 3"};
constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 70, kRight = 200, kTop = 50, kBottom = 60;  // margins around the plot area

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string tick_label(double value) {
  if (std::fabs(value - std::round(value)) < 1e-9) return fmt::format("{}", static_cast<int64_t>(std::round(value)));
  return fmt::format("{:g}", value);
}

// A data point's marker of the given style (circle, square, diamond) centred at (x, y).
std::string marker(std::size_t style, double x, double y) {
  switch (style % std::size(kDashes)) {
    case 0: return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\"/>\n", x, y);
    case 1: return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"7\" height=\"7\"/>\n", x - 3.5, y - 3.5);
    default:
      return fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n", x, y - 4.5,
                         x + 4.5, y, x, y + 4.5, x - 4.5, y);
  }
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  bool empty() const { return lo > hi; }
};

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * magnitude >= raw) {
      step = factor * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::floor(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push_back(v);
  if (ticks.back() < hi - step * 1e-9) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string render_svg(const LinePlot& plot) {
  const auto to_axis_x = [&](double x) { return plot.log2_x ? std::log2(std::max(x, 1e-12)) : x; };
  Range xs, ys;
  for (const auto& series : plot.series)
    for (const auto& [x, y] : series.points) {
      if (!series.reference) xs.add(to_axis_x(x));
      ys.add(y);
    }
  if (xs.empty()) xs.add(0), xs.add(1);
  if (ys.empty()) ys.add(0), ys.add(1);

  std::vector<double> x_ticks;  // in axis units
  if (plot.log2_x) {
    for (double e = std::floor(xs.lo); e <= std::ceil(xs.hi); e += 1) x_ticks.push_back(e);
  } else {
    x_ticks = nice_ticks(xs.lo, xs.hi);
  }
  if (x_ticks.size() == 1) x_ticks.push_back(x_ticks[0] + 1);
  const std::vector<double> y_ticks = nice_ticks(ys.lo, ys.hi);
  const double x0 = x_ticks.front(), x1 = x_ticks.back(), y0 = y_ticks.front(), y1 = y_ticks.back();
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const auto px = [&](double axis_x) { return kLeft + (axis_x - x0) / (x1 - x0) * plot_w; };
  const auto py = [&](double y) { return kTop + plot_h - (y - y0) / (y1 - y0) * plot_h; };

  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{3}</text>\n",
      kWidth, kHeight, kLeft + plot_w / 2, escape_xml(plot.title));

  svg += "<g class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (double t : x_ticks) svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", px(t), py(y0), py(y1));
  for (double t : y_ticks) svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>\n", px(x0), py(t), px(x1));
  svg += "</g>\n";

  svg += fmt::format("<g class=\"axes\" stroke=\"black\" stroke-width=\"1.2\" fill=\"none\">\n"
                     "<polyline points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n</g>\n",
                     px(x0), py(y1), px(x0), py(y0), px(x1), py(y0));
  svg += "<g class=\"ticks\">\n";
  for (double t : x_ticks)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(t), py(y0) + 18,
                       tick_label(plot.log2_x ? std::exp2(t) : t));
  for (double t : y_ticks)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", px(x0) - 8, py(t) + 4, tick_label(t));
  svg += "</g>\n";
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px((x0 + x1) / 2),
                     kHeight - 18, escape_xml(plot.x_label));
  svg += fmt::format("<text x=\"18\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0:.1f})\">{1}</text>\n",
                     py((y0 + y1) / 2), escape_xml(plot.y_label));

  for (size_t s = 0; s < plot.series.size(); ++s) {
    const PlotSeries& series = plot.series[s];
    const char* color = kColors[s % std::size(kColors)];
    const std::size_t style = s / std::size(kColors);
    const char* pattern = kDashes[style % std::size(kDashes)];
    const std::string dash = *pattern ? fmt::format(" stroke-dasharray=\"{}\"", pattern) : "";
    svg += fmt::format("<g class=\"series\" stroke=\"{0}\" fill=\"{0}\">\n", color);
    if (series.reference && !series.points.empty()) {
      svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke-width=\"2\" "
                         "stroke-dasharray=\"6 4\"/>\n",
                         px(x0), py(series.points[0].second), px(x1), py(series.points[0].second));
    } else if (!series.points.empty()) {
      std::string points;
      for (const auto& [x, y] : series.points) points += fmt::format("{:.1f},{:.1f} ", px(to_axis_x(x)), py(y));
      points.pop_back();
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke-width=\"2\"{}/>\n", points, dash);
      for (const auto& [x, y] : series.points) svg += marker(style, px(to_axis_x(x)), py(y));
    }
    const double ly = kTop + 10 + 22 * static_cast<double>(s), lx = kWidth - kRight + 20;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke-width=\"2\"{}/>\n", lx, ly,
                       lx + 24, ly, series.reference ? " stroke-dasharray=\"6 4\"" : dash);
    if (!series.reference) svg += marker(style, lx + 12, ly);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" stroke=\"none\" fill=\"black\">{}</text>\n</g>\n", lx + 32,
                       ly + 4, escape_xml(series.name));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace mkv::eval::report
