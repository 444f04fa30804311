#include "harness/link_trace.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace geotb::harness {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    cells.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

/// A cell or line as the message shows it: quoted, cut at 60 characters.
std::string quote(std::string_view s) {
  std::string v(s.size() > 60 ? std::string(s.substr(0, 57)) + "..." : std::string(s));
  return "\"" + v + "\"";
}

std::string known_columns() {
  std::string s;
  for (const char* c : kLinkTraceColumns) s += (s.empty() ? "" : ", ") + std::string(c);
  return s;
}

struct Reader {
  const std::string& origin;
  int line = 0;

  [[noreturn]] void fail(std::string_view column, std::string_view value, const std::string& why) const {
    throw LinkTraceError(fmt::format("{}:{}: {}: {}: {}", origin, line, column, quote(value), why));
  }

  double number(std::string_view column, std::string_view cell) const {
    double x = 0;
    const char* end = cell.data() + cell.size();
    const auto [ptr, ec] = std::from_chars(cell.data(), end, x);
    if (cell.empty() || ec != std::errc() || ptr != end || !std::isfinite(x)) fail(column, cell, "expected a number");
    return x;
  }
};

}  // namespace

LinkTrace parse_link_trace(std::string_view text, const std::string& origin, double time_scale) {
  if (!(time_scale > 0) || !std::isfinite(time_scale))
    throw LinkTraceError(fmt::format("{}: time_scale {}: must be > 0", origin, time_scale));
  LinkTrace t;
  Reader r{origin};
  // What each column holds, in kLinkTraceColumns order.
  enum Col { kTime, kBandwidth, kRtt, kLoss, kUp };
  std::vector<Col> cols;
  int header_line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++r.line;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;  // blank lines and comments
    const std::vector<std::string_view> cells = split_cells(line);

    if (!header_line) {  // the header: names the columns
      header_line = r.line;
      std::map<std::string_view, int> seen;
      for (size_t i = 0; i < cells.size(); ++i) {
        const std::string column = fmt::format("column {}", i + 1);
        int which = -1;
        for (int k = 0; k < static_cast<int>(std::size(kLinkTraceColumns)); ++k)
          if (cells[i] == kLinkTraceColumns[k]) which = k;
        if (which < 0) r.fail(column, cells[i], fmt::format("unknown column (known: {})", known_columns()));
        if (seen.count(cells[i]))
          r.fail(column, cells[i], fmt::format("duplicate column (also column {})", seen[cells[i]] + 1));
        seen[cells[i]] = static_cast<int>(i);
        cols.push_back(static_cast<Col>(which));
        t.columns.emplace_back(cells[i]);
      }
      if (!seen.count("time_s")) r.fail("header", line, "missing the time_s column (required)");
      if (cols.size() < 2)
        r.fail("header", line, "needs at least one of bandwidth_mbps, rtt_ms, loss, up beside time_s");
      continue;
    }

    if (cells.size() != cols.size())
      r.fail("row", line,
             fmt::format("{} cells, the header (line {}) names {} columns", cells.size(), header_line, cols.size()));
    LinkTraceRow row;
    row.line = r.line;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string_view cell = cells[i];
      const std::string_view column = t.columns[i];
      if (cols[i] == kTime) {
        if (cell.empty()) r.fail(column, cell, "required in every row");
        row.time_s = r.number(column, cell);
        if (row.time_s < 0) r.fail(column, cell, "must be >= 0");
        if (!t.rows.empty() && !(row.time_s > t.rows.back().time_s))
          r.fail(column, cell,
                 fmt::format("must be after the previous row's ({:g} at line {}): times strictly increase",
                             t.rows.back().time_s, t.rows.back().line));
        const double at_s = row.time_s * time_scale;
        const double max_s = std::chrono::duration<double>(kLinkTraceMaxAt).count();
        if (at_s > max_s)
          r.fail(column, cell,
                 fmt::format("times time_scale {:g} is {:g} s: must be at most 24h ({:g} s)", time_scale, at_s, max_s));
        row.at = std::chrono::nanoseconds(std::llround(at_s * 1e9));
        continue;
      }
      if (cell.empty()) continue;  // unchanged
      switch (cols[i]) {
        case kBandwidth: {
          const double mbps = r.number(column, cell);
          if (!(mbps > 0)) r.fail(column, cell, "must be > 0");
          // A scenario's bandwidth range: 1kbps to 10Tbps.
          if (mbps < 1e-3 || mbps > 1e7) r.fail(column, cell, "must be between 0.001 and 10000000 (1kbps to 10Tbps)");
          row.bandwidth_mbps = mbps;
          break;
        }
        case kRtt: {
          const double ms = r.number(column, cell);
          if (ms < 0) r.fail(column, cell, "must be >= 0");
          if (ms > 10000) r.fail(column, cell, "must be at most 10000 (10s)");
          row.rtt_ms = ms;
          break;
        }
        case kLoss: {
          const double p = r.number(column, cell);
          if (!(p >= 0 && p <= 1)) r.fail(column, cell, "must be in [0, 1] (a probability)");
          row.loss = p;
          break;
        }
        case kUp:
          if (cell == "1" || cell == "true") row.up = true;
          else if (cell == "0" || cell == "false") row.up = false;
          else r.fail(column, cell, "expected 0, 1, true or false");
          break;
        case kTime:
          break;
      }
    }
    t.rows.push_back(row);
  }
  if (!header_line)
    throw LinkTraceError(
        fmt::format("{}: no header line (the first line that is not a comment names the columns: {})", origin,
                    known_columns()));
  if (t.rows.empty())
    throw LinkTraceError(
        fmt::format("{}:{}: no data rows after the header (at least one is needed)", origin, header_line));
  return t;
}

LinkTrace read_link_trace(const std::string& path, double time_scale, std::string* text_out) {
  // A regular file of bounded size: not a directory, a device or a pipe (/dev/zero, /dev/stdin).
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw LinkTraceError(fmt::format("{}: cannot open (not a regular file)", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LinkTraceError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kLinkTraceMaxBytes)
    throw LinkTraceError(fmt::format("{}: {} bytes: larger than the {} MiB a trace may have", path, size,
                                     kLinkTraceMaxBytes >> 20));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw LinkTraceError(fmt::format("{}: cannot read ({})", path, std::strerror(errno)));
  LinkTrace t = parse_link_trace(text, path, time_scale);
  if (text_out) *text_out = text;
  return t;
}

}  // namespace geotb::harness
