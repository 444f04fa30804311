#include "harness/plot/line_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/plot/svg.h"

namespace geotb::plot {

namespace {

bool usable(double v, Scale s) { return std::isfinite(v) && (s == Scale::kLinear || v > 0); }

/// Plot frame shared by the charts: grid, ticks, axis titles.
void draw_axes(Svg& svg, const Axis& x, const Axis& y, double left, double top, double right, double bottom) {
  const Stroke grid{"#e3e3e3", 1, {}};
  const Stroke axis{"#555", 1, {}};
  TextStyle tick;
  tick.size_px = 11;
  tick.color = "#444";
  for (const auto& t : y.ticks()) {
    const double py = y.map(t.value);
    svg.line(left, py, right, py, grid);
    tick.anchor = "end";
    svg.text(left - 6, py + 4, t.label, tick);
  }
  for (const auto& t : x.ticks()) {
    const double px = x.map(t.value);
    svg.line(px, top, px, bottom, grid);
    svg.line(px, bottom, px, bottom + 4, axis);
    tick.anchor = "middle";
    svg.text(px, bottom + 16, t.label, tick);
  }
  svg.line(left, bottom, right, bottom, axis);
  svg.line(left, top, left, bottom, axis);
  TextStyle title;
  title.size_px = 12;
  title.anchor = "middle";
  title.color = "#222";
  svg.text((left + right) / 2, bottom + 34, x.title_with_unit(), title);
  title.rotate_deg = -90;
  svg.text(16, (top + bottom) / 2, y.title_with_unit(), title);
}

}  // namespace

std::string render_line_chart(const LineChartSpec& spec) {
  Svg svg(spec.width_px, spec.height_px, spec.title);
  TextStyle ts;
  ts.size_px = 15;
  ts.weight = "bold";
  svg.text(12, 22, spec.title, ts);

  std::vector<LegendItem> legend;
  for (const auto& s : spec.series) legend.push_back({s.label, s.color, s.dash, false, {}, s.markers, s.hollow_markers});
  const double left = 74, right = spec.width_px - 18;
  const double legend_h = draw_legend(nullptr, legend, left, 32, right - left);
  const double top = 32 + legend_h + 10, bottom = spec.height_px - 46;

  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const auto& s : spec.series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (usable(s.x[i], spec.x.scale) && usable(s.y[i], spec.y.scale)) {
        xlo = std::min(xlo, s.x[i]);
        xhi = std::max(xhi, s.x[i]);
        ylo = std::min(ylo, s.y[i]);
        yhi = std::max(yhi, s.y[i]);
      }
  if (!(xhi >= xlo)) {
    TextStyle note;
    note.anchor = "middle";
    note.color = "#777";
    svg.text(spec.width_px / 2, spec.height_px / 2, spec.empty_note, note);
    return svg.str();
  }
  for (const auto& h : spec.hlines)
    if (usable(h.value, spec.y.scale)) {
      ylo = std::min(ylo, h.value);
      yhi = std::max(yhi, h.value);
    }
  const Axis x(spec.x, xlo, xhi, left, right, 7);
  const Axis y(spec.y, ylo, yhi, bottom, top, 6);
  draw_axes(svg, x, y, left, top, right, bottom);
  draw_legend(&svg, legend, left, 32, right - left);

  for (const auto& b : spec.xbands) {
    if (!usable(b.x0, spec.x.scale) || !usable(b.x1, spec.x.scale)) continue;
    const double a = std::clamp(x.map(b.x0), left, right), z = std::clamp(x.map(std::max(b.x0, b.x1)), left, right);
    svg.rect(a, top, std::max(z - a, 1.5), bottom - top, b.color + "33", b.label, b.color);
    TextStyle bt;
    bt.size_px = 10;
    bt.color = b.color;
    bt.halo = true;
    svg.text(a + 3, top + 12, b.label, bt);
  }
  for (const auto& h : spec.hlines)
    if (usable(h.value, spec.y.scale)) svg.line(left, y.map(h.value), right, y.map(h.value), Stroke{h.color, 1.2, "4 4"});
  for (const auto& s : spec.series) {
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      if (s.line && run.size() > 1) svg.polyline(run, Stroke{s.color, 2, s.dash});
      run.clear();
    };
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!usable(s.x[i], spec.x.scale) || !usable(s.y[i], spec.y.scale)) {
        flush();
        continue;
      }
      run.emplace_back(x.map(s.x[i]), y.map(s.y[i]));
    }
    flush();
    if (s.markers)
      for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
        if (usable(s.x[i], spec.x.scale) && usable(s.y[i], spec.y.scale))
          svg.circle(x.map(s.x[i]), y.map(s.y[i]), 3.2, s.hollow_markers ? "#ffffff" : s.color,
                     fmt::format("{}: {} = {:.4g}, {} = {:.4g}", s.label, spec.x.title, s.x[i], spec.y.title, s.y[i]),
                     s.hollow_markers ? s.color : "");
  }
  // Reference-line labels last, so no data point hides them.
  for (const auto& h : spec.hlines) {
    if (!usable(h.value, spec.y.scale)) continue;
    TextStyle lt;
    lt.size_px = 11;
    lt.anchor = "end";
    lt.color = h.color;
    lt.halo = true;
    svg.text(right - 4, y.map(h.value) - 5, h.label, lt);
  }
  return svg.str();
}

}  // namespace geotb::plot
