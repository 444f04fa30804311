#include "harness/plot/svg.h"

#include <fmt/format.h>

namespace geotb::plot {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

double text_width_px(std::string_view s, double size_px) {
  size_t glyphs = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++glyphs;  // count UTF-8 code points, not bytes
  return 0.58 * size_px * static_cast<double>(glyphs);
}

Svg::Svg(double width_px, double height_px, std::string_view title) : w_(width_px), h_(height_px), title_(title) {}

void Svg::line(double x1, double y1, double x2, double y2, const Stroke& s) {
  body_ += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="{:g}")", x1, y1,
                       x2, y2, xml_escape(s.color), s.width);
  if (!s.dash.empty()) body_ += fmt::format(R"( stroke-dasharray="{}")", xml_escape(s.dash));
  if (s.opacity < 1) body_ += fmt::format(R"( stroke-opacity="{:g}")", s.opacity);
  body_ += "/>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& pts, const Stroke& s) {
  if (pts.empty()) return;
  std::string p;
  p.reserve(pts.size() * 14);
  for (const auto& [x, y] : pts) p += fmt::format("{:.1f},{:.1f} ", x, y);
  p.pop_back();
  body_ += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="{:g}" stroke-linejoin="round" points="{}")",
                       xml_escape(s.color), s.width, p);
  if (!s.dash.empty()) body_ += fmt::format(R"( stroke-dasharray="{}")", xml_escape(s.dash));
  if (s.opacity < 1) body_ += fmt::format(R"( stroke-opacity="{:g}")", s.opacity);
  body_ += "/>\n";
}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip,
               std::string_view stroke) {
  body_ += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}")", x, y, w, h,
                       xml_escape(fill));
  if (!stroke.empty()) body_ += fmt::format(R"( stroke="{}" stroke-width="1")", xml_escape(stroke));
  if (tooltip.empty()) {
    body_ += "/>\n";
  } else {
    body_ += fmt::format("><title>{}</title></rect>\n", xml_escape(tooltip));
  }
}

void Svg::circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip,
                 std::string_view stroke) {
  body_ += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="{:g}" fill="{}")", cx, cy, r, xml_escape(fill));
  if (!stroke.empty()) body_ += fmt::format(R"( stroke="{}" stroke-width="1.6")", xml_escape(stroke));
  if (tooltip.empty()) {
    body_ += "/>\n";
  } else {
    body_ += fmt::format("><title>{}</title></circle>\n", xml_escape(tooltip));
  }
}

void Svg::text(double x, double y, std::string_view s, const TextStyle& st) {
  body_ += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{:g}" text-anchor="{}" fill="{}")", x, y, st.size_px,
                       xml_escape(st.anchor), xml_escape(st.color));
  if (st.weight != "normal") body_ += fmt::format(R"( font-weight="{}")", xml_escape(st.weight));
  if (st.rotate_deg != 0) body_ += fmt::format(R"x( transform="rotate({:g} {:.1f} {:.1f})")x", st.rotate_deg, x, y);
  if (!st.css_class.empty()) body_ += fmt::format(R"( class="{}")", xml_escape(st.css_class));
  if (st.halo) body_ += R"( stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke")";
  body_ += fmt::format(">{}</text>\n", xml_escape(s));
}

void Svg::defs(std::string_view markup) { defs_ += markup; }

std::string Svg::str() const {
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:g}" height="{1:g}" viewBox="0 0 {0:g} {1:g}" role="img" aria-label="{2}" font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif">)"
      "\n<title>{2}</title>\n",
      w_, h_, xml_escape(title_));
  if (!defs_.empty()) out += "<defs>" + defs_ + "</defs>\n";
  out += fmt::format(R"(<rect x="0" y="0" width="{:g}" height="{:g}" fill="#ffffff"/>)"
                     "\n",
                     w_, h_);
  out += body_;
  out += "</svg>\n";
  return out;
}

double draw_legend(Svg* svg, const std::vector<LegendItem>& items, double x, double y, double max_width,
                   double font_px) {
  if (items.empty()) return 0;
  const double row_h = font_px + 8, sample_w = 26, gap = 18;
  double cx = x, cy = y;
  for (const auto& it : items) {
    const double w = sample_w + 6 + text_width_px(it.label, font_px);
    if (cx > x && cx + w > x + max_width) {
      cx = x;
      cy += row_h;
    }
    const double mid = cy + row_h / 2;
    if (!svg) {
      cx += w + gap;
      continue;
    }
    if (it.box) {
      svg->rect(cx + 4, mid - 6, sample_w - 8, 12, it.fill.empty() ? it.color : it.fill, {}, it.color);
    } else {
      svg->line(cx, mid, cx + sample_w, mid, Stroke{it.color, 2.5, it.dash});
      if (it.marker) svg->circle(cx + sample_w / 2, mid, 3.5, it.hollow ? "#ffffff" : it.color, {}, it.hollow ? it.color : "");
    }
    TextStyle ts;
    ts.size_px = font_px;
    svg->text(cx + sample_w + 6, mid + font_px * 0.35, it.label, ts);
    cx += w + gap;
  }
  return cy + row_h - y;
}

}  // namespace geotb::plot
