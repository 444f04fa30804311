// Horizontal bar chart, plain or stacked: one bar per category (strategy names stay readable at
// the left), layers stacked left to right, an annotation at each bar's end.
#pragma once

#include <string>
#include <vector>

#include "harness/plot/axis.h"
#include "harness/plot/line_chart.h"

namespace geotb::plot {

struct BarLayer {
  std::string label;  ///< legend entry; a chart with one unlabeled layer has no legend
  std::string color = "#1f77b4";
  bool hatched = false;  ///< drawn as diagonal hatching (e.g. time hidden under compute)
};

struct HBar {
  std::string category;
  std::vector<double> values;  ///< one per layer (missing = 0)
  std::string color;           ///< overrides the colour of a one-layer chart's bar
  std::string annotation;      ///< at the bar's end ("3.58x naive_ddp")
  std::string tooltip;
};

struct BarChartSpec {
  std::string id;  ///< unique in the page (pattern ids derive from it)
  std::string title;
  AxisSpec value_axis;
  std::vector<BarLayer> layers;
  std::vector<HBar> bars;
  std::vector<RefLine> vlines;  ///< vertical reference lines at value
  double width_px = 620;
  double bar_px = 24;
};

/// Returns a standalone <svg> element; its height follows from the number of bars.
std::string render_bar_chart(const BarChartSpec& spec);

}  // namespace geotb::plot
