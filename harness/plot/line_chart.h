// Line / scatter chart: several series over shared x and y axes, a legend above the plot.
#pragma once

#include <string>
#include <vector>

#include "harness/plot/axis.h"

namespace geotb::plot {

struct LineSeries {
  std::string label;
  std::string color = "#1f77b4";
  std::string dash;  ///< SVG dasharray, empty = solid
  std::vector<double> x, y;  ///< same length; on a log axis points <= 0 are left out (the line breaks)
  bool line = true;
  bool markers = false;
  bool hollow_markers = false;  ///< rings instead of dots (tells apart runs drawn in one colour)
};

/// A horizontal reference line (y = value) with a label at its right end.
struct RefLine {
  double value = 0;
  std::string label;
  std::string color = "#666";
};

/// A vertical band x in [x0, x1] behind the lines (a fault's span on a timeline), labelled at the
/// top; x1 == x0 draws a thin line.
struct XBand {
  double x0 = 0, x1 = 0;
  std::string label;
  std::string color = "#d62728";
};

struct LineChartSpec {
  std::string id;  ///< unique in the page: the element id of the <svg>'s wrapper
  std::string title;
  AxisSpec x, y;
  std::vector<LineSeries> series;
  std::vector<RefLine> hlines;
  std::vector<XBand> xbands;
  double width_px = 620, height_px = 380;
  std::string empty_note = "no data";  ///< shown instead of the plot when no series has a point
};

/// Returns a standalone <svg> element.
std::string render_line_chart(const LineChartSpec& spec);

}  // namespace geotb::plot
