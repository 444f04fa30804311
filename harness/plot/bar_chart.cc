#include "harness/plot/bar_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/plot/svg.h"

namespace geotb::plot {

std::string render_bar_chart(const BarChartSpec& spec) {
  const bool log = spec.value_axis.scale == Scale::kLog;
  const size_t n_layers = std::max<size_t>(1, spec.layers.size());
  const double label_font = 12;

  // Horizontal room: category labels at the left, annotations at the right.
  double label_w = 0, note_w = 0;
  for (const auto& b : spec.bars) {
    label_w = std::max(label_w, text_width_px(b.category, label_font));
    note_w = std::max(note_w, text_width_px(b.annotation, 11));
  }
  label_w = std::min(label_w, spec.width_px * 0.4);
  const double left = label_w + 20, right = spec.width_px - note_w - 16;

  std::vector<LegendItem> legend;
  const bool show_legend = !(spec.layers.size() == 1 && spec.layers[0].label.empty()) && !spec.layers.empty();
  for (size_t l = 0; show_legend && l < spec.layers.size(); ++l) {
    const auto& ly = spec.layers[l];
    legend.push_back({ly.label, ly.color, {}, true, ly.hatched ? fmt::format("url(#{}-hatch{})", spec.id, l) : "", false});
  }
  const double legend_h = draw_legend(nullptr, legend, 12, 32, spec.width_px - 24);
  const double top = 32 + legend_h + 8;
  const double slot = spec.bar_px + 10;
  const double bottom = top + slot * static_cast<double>(std::max<size_t>(1, spec.bars.size()));
  const double height = bottom + 46;

  Svg svg(spec.width_px, height, spec.title);
  for (size_t l = 0; l < spec.layers.size(); ++l)
    if (spec.layers[l].hatched)
      svg.defs(fmt::format(
          R"x(<pattern id="{0}-hatch{1}" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="7" height="7" fill="{2}" fill-opacity="0.25"/><line x1="0" y1="0" x2="0" y2="7" stroke="{2}" stroke-width="3"/></pattern>)x",
          xml_escape(spec.id), l, xml_escape(spec.layers[l].color)));
  TextStyle ts;
  ts.size_px = 15;
  ts.weight = "bold";
  svg.text(12, 22, spec.title, ts);
  draw_legend(&svg, legend, 12, 32, spec.width_px - 24);

  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& b : spec.bars) {
    double sum = 0;
    for (size_t l = 0; l < std::min(b.values.size(), n_layers); ++l) sum += b.values[l];
    if (!log || sum > 0) {
      lo = std::min(lo, log ? sum : 0.0);
      hi = std::max(hi, sum);
    }
    if (log)
      for (double v : b.values)
        if (v > 0) lo = std::min(lo, v);
  }
  for (const auto& v : spec.vlines)
    if (!log || v.value > 0) {
      lo = std::min(lo, v.value);
      hi = std::max(hi, v.value);
    }
  if (!(hi >= lo)) {
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
  }
  AxisSpec as = spec.value_axis;
  if (!log) as.include_zero = true;
  const Axis x(as, lo, hi, left, right, 6);

  // Grid and value axis.
  const Stroke grid{"#e3e3e3", 1};
  TextStyle tick;
  tick.size_px = 11;
  tick.anchor = "middle";
  tick.color = "#444";
  for (const auto& t : x.ticks()) {
    const double px = x.map(t.value);
    svg.line(px, top, px, bottom, grid);
    svg.text(px, bottom + 16, t.label, tick);
  }
  svg.line(left, bottom, right, bottom, Stroke{"#555", 1, {}});
  svg.line(left, top, left, bottom, Stroke{"#555", 1, {}});
  TextStyle title;
  title.anchor = "middle";
  svg.text((left + right) / 2, bottom + 34, x.title_with_unit(), title);

  const double base = log ? x.lo() : 0.0;
  for (size_t i = 0; i < spec.bars.size(); ++i) {
    const HBar& b = spec.bars[i];
    const double y0 = top + slot * static_cast<double>(i) + 5;
    TextStyle lab;
    lab.size_px = label_font;
    lab.anchor = "end";
    svg.text(left - 8, y0 + spec.bar_px / 2 + 4, b.category, lab);
    double acc = base;
    for (size_t l = 0; l < n_layers; ++l) {
      const double v = l < b.values.size() ? b.values[l] : 0;
      if (!(v > 0)) continue;
      const double from = acc, to = (log && l == 0) ? v : acc + v;
      acc = to;
      const double x0 = x.map(from), x1 = x.map(to);
      std::string color = spec.layers.empty() ? "#1f77b4" : spec.layers[l].color;
      if (n_layers == 1 && !b.color.empty()) color = b.color;
      const bool hatched = l < spec.layers.size() && spec.layers[l].hatched;
      const std::string fill = hatched ? fmt::format("url(#{}-hatch{})", spec.id, l) : color;
      std::string tip = b.tooltip.empty() ? b.category : b.tooltip;
      if (l < spec.layers.size() && !spec.layers[l].label.empty())
        tip += fmt::format(": {} {}", spec.layers[l].label, format_si(v, spec.value_axis.unit));
      svg.rect(x0, y0, std::max(0.0, x1 - x0), spec.bar_px, fill, tip, hatched ? color : "");
    }
    if (!b.annotation.empty()) {
      TextStyle an;
      an.size_px = 11;
      an.color = "#222";
      svg.text(x.map(std::max(acc, base)) + 6, y0 + spec.bar_px / 2 + 4, b.annotation, an);
    }
  }
  for (const auto& v : spec.vlines) {
    if (log && !(v.value > 0)) continue;
    const double px = x.map(v.value);
    svg.line(px, top - 4, px, bottom, Stroke{v.color, 1.4, "4 3"});
    TextStyle lt;
    lt.size_px = 10;
    lt.anchor = "middle";
    lt.color = v.color;
    lt.halo = true;
    svg.text(px, top - 6, v.label, lt);
  }
  return svg.str();
}

}  // namespace geotb::plot
