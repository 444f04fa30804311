// Unit tests of the SVG plotting helper (harness/plot/) and of the compare pages' structure.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <cmath>

#include <regex>
#include <string>

#include "harness/html_report.h"
#include "harness/markdown_report.h"
#include "harness/plot/axis.h"
#include "harness/plot/bar_chart.h"
#include "harness/plot/line_chart.h"
#include "harness/plot/svg.h"
#include "crafted_report.h"

namespace geotb::plot {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "tick " << i;
}

TEST(Ticks, LinearOneTwoFive) {
  expect_near_all(nice_linear_ticks(0, 7.3, 6), {0, 2, 4, 6, 8});
  expect_near_all(nice_linear_ticks(0, 1, 6), {0, 0.2, 0.4, 0.6, 0.8, 1});
  expect_near_all(nice_linear_ticks(0.52, 0.81, 6), {0.5, 0.6, 0.7, 0.8, 0.9});
  expect_near_all(nice_linear_ticks(0, 24104, 6), {0, 5000, 10000, 15000, 20000, 25000});
  expect_near_all(nice_linear_ticks(0, 0.9, 6), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
  // A flat series still gets an axis.
  EXPECT_GE(nice_linear_ticks(3, 3, 6).size(), 2u);
}

TEST(Ticks, LogDecadesAndSubticks) {
  expect_near_all(log_ticks(5e5, 4e7), {1e5, 1e6, 1e7, 1e8});  // 3 decades: decades only
  expect_near_all(log_ticks(0.3, 8), {0.1, 0.2, 0.5, 1, 2, 5, 10});  // 2 decades: 1-2-5
  expect_near_all(log_ticks(20, 30), {10, 20, 50, 100});
}

TEST(Ticks, Labels) {
  EXPECT_EQ(format_si(36640800, "B"), "36.6 MB");
  EXPECT_EQ(format_si(576511, "B"), "577 kB");
  EXPECT_EQ(format_si(1e9, "bit/s"), "1 Gbit/s");
  EXPECT_EQ(format_si(0.0157, ""), "0.0157");
  EXPECT_EQ(format_si(0, "B"), "0 B");
  EXPECT_EQ(format_tick(0.25, 0.25, false, ""), "0.25");
  EXPECT_EQ(format_tick(4, 2, false, ""), "4");
  EXPECT_EQ(format_tick(2500, 500, true, ""), "2.5 k");
}

// Seeds 42..44: 0.5-steps would label 42.5; whole-number ticks keep 42, 43, 44 only.
TEST(AxisTicks, IntegerTicksDropFractionalOnes) {
  const Axis plain(AxisSpec{"seed", "seed"}, 42, 44, 0, 100);
  bool fractional = false;
  for (const auto& t : plain.ticks()) fractional |= t.value != std::round(t.value);
  EXPECT_TRUE(fractional);  // the nice steps for this span are 0.5
  AxisSpec whole{"seed", "seed"};
  whole.integer_ticks = true;
  const Axis seeds(whole, 42, 44, 0, 100);
  std::vector<double> got;
  for (const auto& t : seeds.ticks()) got.push_back(t.value);
  EXPECT_EQ(got, (std::vector<double>{42, 43, 44}));
}

TEST(AxisMap, LinearAndLogMapOntoPixels) {
  const Axis lin(AxisSpec{"t", "s"}, 0, 10, 100, 600);
  EXPECT_DOUBLE_EQ(lin.map(0), 100);
  EXPECT_DOUBLE_EQ(lin.map(10), 600);
  EXPECT_EQ(lin.title_with_unit(), "t [s]");
  AxisSpec ls{.title = "bytes", .unit = "B", .scale = Scale::kLog, .si_prefix = true, .unit_in_ticks = true};
  const Axis log(ls, 1e3, 5e5, 0, 300);  // domain rounded out to whole decades: 1e3 .. 1e6
  EXPECT_DOUBLE_EQ(log.map(1e3), 0);
  EXPECT_DOUBLE_EQ(log.map(1e6), 300);
  EXPECT_NEAR(log.map(1e4), 100, 1e-9);
  EXPECT_EQ(log.ticks().front().label, "1 kB");
  EXPECT_EQ(log.title_with_unit(), "bytes [B] (log scale)");
  // A maximum on a decade gets headroom: the top of the frame is the next decade.
  const Axis top(ls, 0.5, 1.0, 0, 300);
  EXPECT_DOUBLE_EQ(top.hi(), 10);
}

TEST(Svg, EscapesText) {
  Svg s(100, 50, "a<b & \"c\"");
  s.text(1, 2, "<script>");
  const std::string out = s.str();
  EXPECT_NE(out.find("<title>a&lt;b &amp; &quot;c&quot;</title>"), std::string::npos);
  EXPECT_EQ(out.find("<script>"), std::string::npos);
  EXPECT_NE(out.find("&lt;script&gt;"), std::string::npos);
}

TEST(LineChart, SeriesLegendAxesAndLogBreaks) {
  LineChartSpec c;
  c.id = "t";
  c.title = "Loss";
  c.x = {"time", "s"};
  c.y = {"loss", "nats", Scale::kLog};
  c.series.push_back({"naive", "#D55E00", "", {1, 2, 3, 4}, {2, 1, 0, 0.5}});  // 0 breaks the log line
  c.series.push_back({"hier", "#0072B2", "8 4", {1, 2}, {1.5, 0.7}, true, true});
  const std::string svg = render_line_chart(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<title>Loss</title>"), std::string::npos);
  EXPECT_NE(svg.find("time [s]"), std::string::npos);
  EXPECT_NE(svg.find("loss [nats] (log scale)"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 2u);  // naive: one run of 2 points (the lone 0.5 draws no line); hier: one
  EXPECT_EQ(count(svg, "<circle"), 2u + 1u);  // hier's 2 markers + its legend sample
  EXPECT_NE(svg.find(">naive</text>"), std::string::npos);
  EXPECT_NE(svg.find(">hier</text>"), std::string::npos);
}

TEST(LineChart, EmptyShowsTheNote) {
  LineChartSpec c;
  c.title = "Efficiency";
  c.empty_note = "nothing logged";
  const std::string svg = render_line_chart(c);
  EXPECT_NE(svg.find("nothing logged"), std::string::npos);
}

TEST(BarChart, StackedLayersHatchingAndAnnotations) {
  BarChartSpec b;
  b.id = "st";
  b.title = "Time per step";
  b.value_axis = {"time", "ms"};
  b.layers = {{"compute", "#4C9F70"}, {"exposed", "#D55E00"}, {"overlapped", "#0072B2", true}};
  b.bars.push_back({"naive_ddp", {1, 17, 0}, "", "14.1", ""});
  b.bars.push_back({"hier", {0.8, 4.2, 1.8}, "", "5.3", ""});
  const std::string svg = render_bar_chart(b);
  EXPECT_NE(svg.find("<pattern id=\"st-hatch2\""), std::string::npos);
  // 5 non-zero segments + 3 legend boxes + the background.
  EXPECT_EQ(count(svg, "<rect"), 5u + 3u + 1u + 1u /* the pattern's own rect */);
  EXPECT_NE(svg.find("fill=\"url(#st-hatch2)\""), std::string::npos);
  EXPECT_NE(svg.find(">14.1</text>"), std::string::npos);
  EXPECT_NE(svg.find("time [ms]"), std::string::npos);
}

TEST(Pages, HtmlIsSelfContainedWithEveryChartAndMarkdownSaysTheRatios) {
  using harness::crafted::report_json;
  nlohmann::json a = report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}});
  a["scenario"]["description"] = "numbers from <b>somewhere</b> & elsewhere";
  a["strategies"][1]["exchanges"] = {
      {{"step", 2}, {"bytes", 128}, {"seconds", 0.02}, {"lower_bound_s", 0.01}, {"efficiency", 0.5}}};
  nlohmann::json b = report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 200, 256, 0.75}});
  const std::vector<model::RunReport> reports = {model::parse_report(a, "a.json"), model::parse_report(b, "b.json")};

  const std::string html = harness::render_html_report(reports, "naive_ddp");
  EXPECT_EQ(count(html, "<svg"), 7u);
  for (const char* t : {"Training loss vs wall time", "Training loss vs samples", "Test accuracy vs samples",
                        "Throughput", "Time per step", "WAN traffic per run", "Exchange efficiency"})
    EXPECT_NE(html.find(std::string("<title>") + t + "</title>"), std::string::npos) << t;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>somewhere"), std::string::npos) << "the description must be escaped";
  EXPECT_NE(html.find("numbers from &lt;b&gt;somewhere&lt;/b&gt; &amp; elsewhere"), std::string::npos);
  EXPECT_NE(html.find(">hier (run 2)</text>"), std::string::npos);
  EXPECT_NE(html.find("4.00×"), std::string::npos);
  EXPECT_NE(html.find("2.00×"), std::string::npos);
  // Two strategies with hatched overlap in the time-per-step chart use one pattern id (the
  // overlap is the fourth layer: compute, compression, exposed, overlapped).
  EXPECT_EQ(count(html, "<pattern id=\"step-time-hatch3\""), 1u);
  EXPECT_NE(html.find(">compression (compress, decompress, re-base)</text>"), std::string::npos);

  const std::string md = harness::render_markdown_report(reports, "naive_ddp", "x.html");
  EXPECT_NE(md.find("| hier (run 1) | 400 | 4.00× |"), std::string::npos) << md;
  EXPECT_NE(md.find("**hier (run 2)**: 2.00× the throughput of naive_ddp with 25 % of its WAN bytes"), std::string::npos)
      << md;
  EXPECT_NE(md.find("[x.html](x.html)"), std::string::npos);
  EXPECT_EQ(html.find("fig-adaptive-k"), std::string::npos) << "no run adapted K";
}

// A page of 16 runs: naive_ddp keeps the strategy table's colour, every run up to the palette's 14
// colours gets its own, and the two past it reuse colours with a dash pattern.
TEST(Pages, EveryRunOfAPageHasItsOwnColourWhileThePaletteLasts) {
  using harness::crafted::report_json;
  std::vector<harness::crafted::Strat> runs = {{"naive_ddp", 100, 1024, 0.75}};
  for (int i = 1; i < 16; ++i) runs.push_back({"run" + std::to_string(i), 100.0 + i, 256, 0.75});
  const std::string html = harness::render_html_report({model::parse_report(report_json(runs), "a.json")}, "naive_ddp");
  std::map<std::string, std::string> colour;  // run -> its swatch in the metrics table
  const std::string mark = "<tr><td><span class=\"swatch\" style=\"background:";
  for (size_t at = html.find(mark); at != std::string::npos; at = html.find(mark, at + 1)) {
    const size_t c = at + mark.size(), end = html.find("</td>", c);
    const std::string col = html.substr(c, 7), name = html.substr(html.find("</span>", c) + 7, end - html.find("</span>", c) - 7);
    colour.emplace(name, col);
  }
  ASSERT_EQ(colour.size(), 16u);
  EXPECT_EQ(colour.at("naive_ddp"), "#D55E00");
  std::set<std::string> first14;
  for (int i = 0; i < 14; ++i) first14.insert(colour.at(i ? "run" + std::to_string(i) : "naive_ddp"));
  EXPECT_EQ(first14.size(), 14u);
  EXPECT_EQ(colour.at("run14"), "#D55E00");  // the palette again, from its start
  EXPECT_NE(html.find("stroke-dasharray=\"8 4\""), std::string::npos);
}

// "K": "auto": K per round against time (a step line: the previous K holds until the next round),
// beside the WAN bandwidth of the timeline (report scenario.wan[].bandwidth_changes).
TEST(Pages, AdaptiveKIsPlottedBesideTheLinkBandwidth) {
  using harness::crafted::report_json;
  nlohmann::json a = report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}});
  a["strategies"][1]["exchanges"] = {
      {{"step", 0}, {"bytes", 128}, {"seconds", 0.02}, {"lower_bound_s", 0.01}, {"efficiency", 0.5}, {"K", 1}},
      {{"step", 1}, {"bytes", 128}, {"seconds", 0.02}, {"lower_bound_s", 0.01}, {"efficiency", 0.5}, {"K", 2}},
      {{"step", -1}, {"bytes", 512}, {"seconds", 0.05}, {"lower_bound_s", 0.01}, {"efficiency", 0.2}}};
  a["scenario"]["wan"][0]["bandwidth_changes"] = {{{"at_s", 0.6}, {"bandwidth_bps", 1e8}}};
  // A non-IID partition: the examples per class of each DC in a table under the scenario.
  a["scenario"]["workload"]["partition"] = {{"kind", "label_skew"}, {"classes_per_dc", 5}};
  a["scenario"]["workload"]["label_histogram_by_dc"] = {{"a", {1, 2, 3, 4, 5, 0, 0, 0, 0, 0}},
                                                        {"b", {0, 0, 0, 0, 0, 6, 7, 8, 9, 10}}};
  const model::RunReport r = model::parse_report(a, "a.json");
  ASSERT_EQ(r.strategies[1].exchanges[1].K, 2);
  ASSERT_EQ(r.scenario.wan[0].bandwidth_changes.size(), 1u);
  const std::string html = harness::render_html_report({r}, "naive_ddp");
  EXPECT_EQ(count(html, "<svg"), 9u);
  for (const char* t : {"K per round (\"K\": \"auto\")", "WAN bandwidth (scenario timeline)"})
    EXPECT_NE(html.find(std::string("<title>") + plot::xml_escape(t) + "</title>"), std::string::npos) << t;
  EXPECT_NE(html.find(">a – b</text>"), std::string::npos);
  EXPECT_NE(html.find("<caption>Training examples per class, by data center"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>b</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">0</td>"
                      "<td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">6</td><td class=\"num\">7</td>"
                      "<td class=\"num\">8</td><td class=\"num\">9</td><td class=\"num\">10</td><td class=\"num\">40</td></tr>"),
            std::string::npos);
  // The report writes K back (and a K outside [1, 100000] is refused by name).
  nlohmann::json back = r.strategies[1].exchanges[1];
  EXPECT_EQ(back["K"], 2);
  EXPECT_FALSE(nlohmann::json(r.strategies[1].exchanges[2]).contains("K"));
  a["strategies"][1]["exchanges"][1]["K"] = 0;
  try {
    model::parse_report(a, "a.json");
    ADD_FAILURE() << "K 0 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("exchanges[1].K"), std::string::npos) << e.what();
  }
}

// Node faults' policy "estimate" and a quorum of sites: their tables (Markdown and HTML) and the
// estimate's chart, from a crafted report (mean ± sd over the estimated steps; the decisions
// after the first, with the data centers by name).
TEST(Pages, EstimatesAndQuorumDecisionsAreTabulated) {
  using harness::crafted::report_json;
  nlohmann::json a = report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}});
  a["strategies"][1]["faults"] = {
      {"heartbeat", {{"interval_s", 2}, {"timeout_s", 3}, {"confirmation_s", 2}}},
      {"policy", "estimate"},
      {"estimate", {{"weights", "similarity"}, {"decay", 1}}},
      {"estimates",
       {{{"step", 7}, {"rank", 3}, {"dc", 1}, {"cosine", 0.5}, {"rel_error", 1.0}, {"shrink_cosine", 0.25}, {"shrink_rel_error", 2.0}},
        {{"step", 8}, {"rank", 3}, {"dc", 1}, {"cosine", 0.25}, {"rel_error", 0.5}, {"shrink_cosine", 0.25}, {"shrink_rel_error", 1.0}}}},
      {"shard", "drop"}, {"events", nlohmann::json::array()}, {"detections", nlohmann::json::array()},
      {"false_detections", 0}, {"heartbeats_sent", 0}, {"full_recovery_above", 0.25}, {"full_recovery", nullptr}};
  a["strategies"][0]["quorum"] = {{"timeout_s", 5},
                                  {"decisions", {{{"round", 0}, {"step", 7}, {"sites", {0, 1}}, {"at_s", 0.4}},
                                                 {{"round", 11}, {"step", 95}, {"sites", {1}}, {"at_s", 10.0}}}}};
  const model::RunReport r = model::parse_report(a, "a.json");
  ASSERT_TRUE(r.strategies[1].faults->estimate.has_value());
  ASSERT_EQ(r.strategies[1].faults->estimates.size(), 2u);
  ASSERT_TRUE(r.strategies[0].quorum.has_value());
  const std::string md = harness::render_markdown_report({r}, "naive_ddp", "x.html");
  // cos 0.375 ± 0.177 (sd of 0.5 and 0.25), rel. error 0.750 ± 0.354; shrink's 0.250 ± 0.000, 1.500 ± 0.707.
  EXPECT_NE(md.find("| hier | similarity | 2 | 0.375 ± 0.177 | 0.750 ± 0.354 | 0.250 ± 0.000 | 1.500 ± 0.707 |"),
            std::string::npos) << md;
  const std::string b = r.scenario.datacenters[1].name;
  EXPECT_NE(md.find("| naive_ddp | 5 s | round 11 (after step 95) at 10.00 s: " + b + " |"), std::string::npos) << md;
  const std::string html = harness::render_html_report({r}, "naive_ddp");
  EXPECT_NE(html.find("<title>Estimated gradient of the dead against its truth</title>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Quorum of sites</h2>"), std::string::npos);
}

}  // namespace
}  // namespace geotb::plot
