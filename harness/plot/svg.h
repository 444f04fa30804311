// A minimal SVG writer for the report charts: elements are appended in paint order, every
// coordinate is in SVG user units (pixels at 100 % zoom), text is XML-escaped here.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace geotb::plot {

/// Escapes &, <, >, " and ' for XML text and attribute values.
std::string xml_escape(std::string_view s);

/// Approximate width in pixels of `s` set in the report's sans-serif font at `size_px`
/// (used to lay out legends and labels; an average glyph is ~0.58 em wide).
double text_width_px(std::string_view s, double size_px);

struct Stroke {
  Stroke(std::string color_ = "#333", double width_ = 1.5, std::string dash_ = {}, double opacity_ = 1.0)
      : color(std::move(color_)), width(width_), dash(std::move(dash_)), opacity(opacity_) {}
  std::string color;
  double width;
  std::string dash;  ///< SVG stroke-dasharray ("6 3"), empty = solid
  double opacity;
};

struct TextStyle {
  double size_px = 12;
  std::string anchor = "start";  ///< start, middle, end
  std::string weight = "normal";
  std::string color = "#222";
  double rotate_deg = 0;  ///< around the anchor point
  std::string css_class;
  bool halo = false;  ///< a white outline under the glyphs, for labels drawn over data
};

class Svg {
 public:
  /// `title` becomes the <title> element (tooltips, accessibility, and what tests look for).
  Svg(double width_px, double height_px, std::string_view title);

  void line(double x1, double y1, double x2, double y2, const Stroke& s);
  void polyline(const std::vector<std::pair<double, double>>& pts, const Stroke& s);
  /// `fill` may be a colour or "url(#pattern-id)"; `tooltip` adds a <title> child.
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip = {},
            std::string_view stroke = {});
  void circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip = {},
              std::string_view stroke = {});
  void text(double x, double y, std::string_view s, const TextStyle& style = {});
  /// Verbatim markup for <defs> (patterns); the caller escapes.
  void defs(std::string_view markup);

  std::string str() const;
  double width() const { return w_; }
  double height() const { return h_; }

 private:
  double w_, h_;
  std::string title_, defs_, body_;
};

struct LegendItem {
  std::string label;
  std::string color;
  std::string dash;      ///< line items: dasharray
  bool box = false;      ///< a filled box (bars) instead of a line sample
  std::string fill;      ///< box fill override ("url(#hatch)")
  bool marker = false;   ///< a dot on the line sample
  bool hollow = false;   ///< the dot is a ring
};

/// Lays legend items out left to right from (x, y) (y = top), wrapping at x + max_width.
/// Returns the height used (0 for no items); with svg == nullptr it only measures.
double draw_legend(Svg* svg, const std::vector<LegendItem>& items, double x, double y, double max_width,
                   double font_px = 12);

}  // namespace geotb::plot
