#include "harness/html_report.h"

#include "engine/strategies/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/plot/bar_chart.h"
#include "harness/plot/line_chart.h"
#include "harness/plot/svg.h"
#include "engine/strategy.h"
#include "model/metrics.h"

namespace geotb::harness {

namespace {

namespace mx = model::metrics;
using plot::xml_escape;

/// Okabe-Ito colours (distinguishable with colour-blindness), then six more. Each strategy of the
/// strategy table (engine::strategy_names()) prefers the colour at its table position, so a
/// strategy keeps its colour from one report to the next; a page never gives one colour to two
/// runs while a colour is free (a labelled run, "powersgd-r2", and one the table does not know
/// take the next free one), and past the palette a colour comes back with a dash pattern.
constexpr const char* kPalette[] = {"#D55E00", "#56B4E9", "#009E73", "#0072B2", "#666666", "#CC79A7",
                                    "#E69F00", "#000000", "#8C564B", "#BCBD22", "#17BECF", "#7F3C8D",
                                    "#A6761D", "#E7298A"};
const char* kDashes[] = {"", "8 4", "2 3", "10 3 2 3"};

struct RunStyle {
  std::string color;
  std::string dash;  ///< "" unless the palette ran out on this page
};

/// name -> style for every strategy run of `reports`.
std::map<std::string, RunStyle> strategy_styles(const std::vector<model::RunReport>& reports) {
  std::vector<std::string> names;  // the page's runs, in order of appearance
  std::map<std::string, size_t> preferred;
  for (const auto& r : reports)
    for (const auto& s : r.strategies) {
      if (preferred.count(s.name)) continue;
      names.push_back(s.name);
      const std::string base = s.config.is_object() && s.config.contains("name") && s.config["name"].is_string()
                                   ? s.config["name"].get<std::string>()
                                   : s.name;
      const auto& table = engine::strategy_names();
      const auto it = std::find(table.begin(), table.end(), base);
      preferred[s.name] = it == table.end() ? std::size(kPalette) : static_cast<size_t>(it - table.begin());
    }
  std::map<std::string, RunStyle> out;
  std::vector<bool> used(std::size(kPalette), false);
  for (const auto& n : names) {  // first: every run whose table colour is still free
    const size_t p = preferred[n];
    if (p < used.size() && !used[p] && !out.count(n)) {
      used[p] = true;
      out[n] = {kPalette[p], ""};
    }
  }
  size_t next = 0, cycle = 0;
  for (const auto& n : names) {  // then the rest: free colours, then colours again with a dash
    if (out.count(n)) continue;
    while (next < used.size() && used[next]) ++next;
    if (next == used.size()) {
      std::fill(used.begin(), used.end(), false);
      next = 0;
      ++cycle;
    }
    used[next] = true;
    out[n] = {kPalette[next], cycle ? kDashes[1 + (cycle - 1) % (std::size(kDashes) - 1)] : ""};
  }
  return out;
}

std::string fmt_duration_s(double s) {
  if (s >= 1) return fmt::format("{:.4g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} µs", s * 1e6);
}

std::string fmt_rate(double bps) { return plot::format_si(bps, "bit/s"); }

bool any_seeds(const std::vector<ComparedRun>& runs) {
  for (const auto& c : runs)
    if (!c.run->seeds.empty()) return true;
  return false;
}

bool any_target(const std::vector<ComparedRun>& runs) {
  for (const auto& c : runs)
    if (c.run->metrics.time_to_accuracy) return true;
  return false;
}

/// Trailing mean over `w` values (the first w-1 average what exists): loss per step is noisy
/// (one mini-batch per worker), the trend is what the chart is for.
std::vector<double> trailing_mean(const std::vector<double>& v, size_t w) {
  std::vector<double> out(v.size());
  double sum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    sum += v[i];
    if (i >= w) sum -= v[i - w];
    out[i] = sum / static_cast<double>(std::min(i + 1, w));
  }
  return out;
}

std::string css() {
  return R"(
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 16px 20px; color: #222; background: #fafafa; }
h1 { font-size: 24px; margin: 0 0 4px 0; }
h2 { font-size: 18px; margin: 28px 0 10px 0; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.desc { margin: 4px 0 12px 0; color: #444; max-width: 1100px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th { background: #f0f0f0; }
td:first-child { white-space: nowrap; }
dl.ctx { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; font-size: 13px; margin: 8px 0; }
dl.ctx dt { color: #666; } dl.ctx dd { margin: 0; font-family: "DejaVu Sans Mono", monospace; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; background: #fff; border: 1px solid #ddd; border-radius: 4px; padding: 6px; }
figcaption { font-size: 12px; color: #555; max-width: 610px; padding: 2px 6px 4px 6px; }
.fail { color: #b00020; font-weight: bold; }
ul.key { font-size: 15px; margin: 6px 0 10px 0; padding-left: 22px; } ul.key li { margin: 2px 0; }
td.alarm { color: #b00020; font-weight: bold; } p.alarm { color: #b00020; font-size: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -1px; margin-right: 5px; }
)";
}

std::string figure(const std::string& svg, const std::string& id, const std::string& caption) {
  return fmt::format("<figure id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n", xml_escape(id), svg,
                     xml_escape(caption));
}

std::string header_html(const std::vector<model::RunReport>& reports) {
  std::string h;
  const model::RunReport& r0 = reports.front();
  for (size_t i = 0; i < reports.size(); ++i) {
    const model::RunReport& r = reports[i];
    const model::ScenarioSummary& sc = r.scenario;
    const bool first_of_scenario = i == 0 || sc.hash != reports[i - 1].scenario.hash;
    if (!first_of_scenario) continue;
    if (reports.size() > 1 && sc.name != r0.scenario.name)
      h += fmt::format("<h2>Scenario {}</h2>\n", xml_escape(sc.name));
    if (!sc.description.empty()) h += fmt::format("<p class=\"desc\">{}</p>\n", xml_escape(sc.description));
    std::string dcs, links;
    for (const auto& d : sc.datacenters) {
      const auto w = sc.workload.dc_weight_by_dc.find(d.name);  // present when the DCs weigh differently
      dcs += fmt::format("{}{} ({} workers{})", dcs.empty() ? "" : ", ", d.name, d.workers,
                         w == sc.workload.dc_weight_by_dc.end() ? "" : fmt::format(", weight {:.4g}", w->second));
    }
    for (const auto& l : sc.wan)
      links += fmt::format("{}{} – {}: {}, RTT {}, loss {:.3g} %", links.empty() ? "" : "; ", l.a, l.b,
                           fmt_rate(l.bandwidth_bps), fmt_duration_s(l.rtt_s), l.loss_rate * 100);
    const std::string workload = fmt::format("model {}, dataset {}, batch_per_worker {}, steps {}", sc.workload.model,
                                             sc.workload.dataset, sc.workload.batch_per_worker, sc.workload.steps);
    h += "<dl class=\"ctx\">\n";
    auto row = [&](const std::string& k, const std::string& v) {
      h += fmt::format("<dt>{}</dt><dd>{}</dd>\n", xml_escape(k), xml_escape(v));
    };
    row("scenario", fmt::format("{} ({})", sc.name, sc.file));
    row("scenario hash", sc.hash);
    row("seed", std::to_string(sc.seed));
    row("data centers", dcs);
    row("WAN links", links.empty() ? "none" : links);
    row("network", sc.network);
    row("workload", workload);
    if (sc.workload.partition) row("data partition", sc.workload.partition->dump());
    if (sc.workload.global_batch) row("global batch", sc.workload.global_batch->dump());
    h += "</dl>\n";
    // A non-IID partition: what each data center trains on (docs/guide/scenario.md "Data partitions").
    if (!sc.workload.label_histogram_by_dc.empty()) {
      h += "<table>\n<caption>Training examples per class, by data center (the scenario's seed)</caption>\n"
           "<tr><th>data center</th>";
      for (int c = 0; c < 10; ++c) h += fmt::format("<th>class {}</th>", c);
      h += "<th>total</th></tr>\n";
      for (const auto& [dc, counts] : sc.workload.label_histogram_by_dc) {
        uint64_t total = 0;
        h += fmt::format("<tr><td>{}</td>", xml_escape(dc));
        for (uint64_t n : counts) {
          total += n;
          h += fmt::format("<td class=\"num\">{}</td>", n);
        }
        h += fmt::format("<td class=\"num\">{}</td></tr>\n", total);
      }
      h += "</table>\n";
    }
  }
  h += "<h2>Runs</h2>\n<table>\n<tr><th>run</th><th>report</th><th>date (UTC)</th><th>git revision</th>"
       "<th>build</th><th>host</th><th>threads</th><th>libraries</th><th>strategies</th><th>clock and compute</th></tr>\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    const model::RunReport& r = reports[i];
    std::string libs, names;
    for (const auto& [k, v] : r.context.libraries) libs += fmt::format("{}{} {}", libs.empty() ? "" : ", ", k, v);
    for (const auto& s : r.strategies) names += (names.empty() ? "" : ", ") + s.name;
    const std::string threads =
        r.context.hardware_threads ? std::to_string(*r.context.hardware_threads) : std::string("?");
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        i + 1, xml_escape(r.source), xml_escape(r.context.started_at), xml_escape(r.context.git_revision),
        xml_escape(r.context.build_type), xml_escape(r.context.host), xml_escape(threads), xml_escape(libs),
        xml_escape(names), xml_escape(model::describe_figures(r.context)));
  }
  h += "</table>\n";
  for (const model::RunReport& r : reports)
    for (const auto& x : r.failures)
      h += fmt::format("<p class=\"fail\">{}: strategy {} failed: {}</p>\n", xml_escape(r.source),
                       xml_escape(x.strategy), xml_escape(x.error));
  return h;
}

std::string metrics_table(const std::vector<ComparedRun>& runs, const std::string& baseline) {
  std::string t =
      "<table>\n<tr><th>strategy</th><th>samples/s</th><th>× " + xml_escape(baseline) +
      "</th><th>compute<br>ms/step</th><th>exposed comm<br>ms/step</th><th>overlapped comm<br>ms/step</th>"
      "<th>comm / compute</th><th>WAN payload</th><th>WAN on the wire</th><th>WAN ÷ " +
      xml_escape(baseline) +
      "</th><th>exchanges</th><th>exchange efficiency<br>(mean)</th><th>time per exchange<br>(mean, s)</th>"
      "<th>final test accuracy</th><th>Δ accuracy<br>(points)"
      "</th><th>wall</th>";
  t += "</tr>\n";
  for (const auto& c : runs) {
    const model::StrategyMetrics& s = c.run->metrics;
    std::string speedup = "–", wan_ratio = "–", dacc = "–";
    const std::optional<double> exch_s = s.exchange_seconds_mean.value_or(std::nullopt);
    if (c.baseline) {
      const model::StrategyMetrics& b = c.baseline->metrics;
      speedup = fmt::format("{:.2f}×", mx::throughput_ratio(s, b));
      if (b.wan_payload_bytes > 0) wan_ratio = fmt::format("{:.4g}", mx::wan_bytes_ratio(s, b));
      dacc = fmt::format("{:+.2f}", 100 * mx::accuracy_delta(s, b));
    }
    t += fmt::format(
        "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{:.2f}</td>"
        "<td class=\"num{}\">{:.3f}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.4f}{}</td>"
        "<td class=\"num\">{}</td>"
        "<td class=\"num\">{:.1f} s</td>",
        c.color, xml_escape(c.label), xml_escape(model::throughput_text(c.report->context, s.samples_per_s)), speedup,
        1e3 * s.compute_s_per_step,
        1e3 * s.exposed_comm_s_per_step, 1e3 * s.overlapped_comm_s_per_step,
        mx::comm_compute_alarm(s.comm_compute_ratio) ? " alarm" : "", s.comm_compute_ratio,
        mx::comm_compute_alarm(s.comm_compute_ratio) ? " ⚠" : "",
        plot::format_si(static_cast<double>(s.wan_payload_bytes), "B") +
            (s.wan_final_sync_bytes && *s.wan_final_sync_bytes > 0
                 ? "<br>(final sync " + plot::format_si(static_cast<double>(*s.wan_final_sync_bytes), "B") + ")"
                 : std::string()),
        plot::format_si(static_cast<double>(s.wan_wire_bytes), "B"), wan_ratio, s.exchanges,
        s.exchange_efficiency_mean ? fmt::format("{:.3g}", *s.exchange_efficiency_mean) : std::string("–"),
        exch_s ? fmt::format("{:.3g}", *exch_s) : std::string("–"),
        s.final_test_accuracy, xml_escape(model::accuracy_note(c.report->context)), dacc, s.wall_s);
    t += "</tr>\n";
  }
  t += "</table>\n";
  std::string alarms;
  for (const auto& c : runs)
    if (mx::comm_compute_alarm(c.run->metrics.comm_compute_ratio))
      alarms += fmt::format("{}{} ({:.3g})", alarms.empty() ? "" : ", ", c.label, c.run->metrics.comm_compute_ratio);
  if (!alarms.empty())
    t += "<p class=\"alarm\">⚠ comm/compute alarm: exposed communication above " +
         fmt::format("{:g}", mx::kCommComputeAlarm) + " of compute for " + xml_escape(alarms) + ".</p>\n";
  return t;
}

/// With seeds or a time-to-accuracy target: the figures that decide between strategies, over seeds.
std::string seeds_table(const std::vector<ComparedRun>& runs, const std::string& baseline) {
  if (!any_seeds(runs) && !any_target(runs)) return "";
  std::string t = "<h2>Over seeds, time to accuracy</h2>\n<table>\n<tr><th>strategy</th><th>× " +
                  xml_escape(baseline) + "<br>(throughput)</th><th>WAN bytes ÷ " + xml_escape(baseline) +
                  "</th><th>final test accuracy<br>(mean ± sd over seeds)</th><th>Δ mean accuracy<br>(points)</th>"
                  "<th>time to accuracy</th><th>comm / compute</th></tr>\n";
  for (const auto& c : runs) {
    const model::StrategyMetrics& s = c.run->metrics;
    std::string speedup = "–", wan_ratio = "–", dacc = "–";
    if (c.baseline) {
      const model::StrategyMetrics& b = c.baseline->metrics;
      speedup = fmt::format("{:.2f}×", mx::throughput_ratio(s, b));
      if (b.wan_payload_bytes > 0) wan_ratio = fmt::format("{:.4g}", mx::wan_bytes_ratio(s, b));
      const auto sum = mx::seed_summary(c.run->seeds), bsum = mx::seed_summary(c.baseline->seeds);
      if (sum && bsum)
        dacc = fmt::format("{:+.2f}", 100 * (sum->final_test_accuracy.mean - bsum->final_test_accuracy.mean));
      else
        dacc = fmt::format("{:+.2f}", 100 * mx::accuracy_delta(s, b));
    }
    const bool alarm = mx::comm_compute_alarm(s.comm_compute_ratio);
    t += fmt::format(
        "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num{}\">{:.3g}{}</td></tr>\n",
        c.color, xml_escape(c.label), speedup, wan_ratio,
        xml_escape(c.run->seeds.empty() ? fmt::format("{:.4f} (1 seed)", s.final_test_accuracy)
                                        : seed_accuracy_text(*c.run)),
        dacc, xml_escape(time_to_accuracy_text(*c.run)), alarm ? " alarm" : "", s.comm_compute_ratio,
        alarm ? " ⚠" : "");
  }
  return t + "</table>\n";
}

/// The `geotb exec` jobs: step time beside the strategies', every rank's exit, link traffic.
std::string jobs_html(const std::vector<model::ExecReport>& jobs, const std::vector<ComparedRun>& runs) {
  const std::string key = mx::kJobStepMetric;
  std::string h = "<h2>Your job (geotb exec)</h2>\n<table>\n<tr><th>job</th><th>command</th><th>status</th><th>ranks</th>"
                  "<th>mean " + key + "<br>(rank 0), ms</th>";
  for (const auto& c : runs) h += "<th>÷ " + xml_escape(c.label) + "<br>(" + fmt::format("{:.1f}", 1e3 * mx::mean_step_s(*c.run)) + " ms/step)</th>";
  h += "<th>wall</th></tr>\n";
  plot::LineChartSpec chart;
  chart.id = "job-step-time";
  chart.title = "Time per step: your job and the strategies";
  chart.x = {.title = "step", .unit = "step", .include_zero = true};
  chart.y = {.title = "time per step", .unit = "ms", .include_zero = true};
  for (const auto& c : runs) {
    plot::LineSeries s{c.label, c.color, c.dash, {}, {}};
    const std::vector<double> d = mx::step_durations_s(*c.run);
    for (size_t i = 0; i < d.size(); ++i) {
      s.x.push_back(static_cast<double>(i + 1));
      s.y.push_back(1e3 * d[i]);
    }
    chart.series.push_back(std::move(s));
  }
  std::string links;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const model::ExecReport& r = jobs[j];
    const std::string label = jobs.size() > 1 ? fmt::format("job {}", j + 1) : "job";
    const std::optional<double> mean = mx::job_metric_mean(r, key);
    std::string status = r.status;
    if (r.first_failure) status += ": " + r.first_failure->message;
    h += fmt::format("<tr><td>{}<br>{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{} × {}</td><td class=\"num\">{}</td>",
                     xml_escape(label), xml_escape(r.source), xml_escape(command_line(r.command)),
                     xml_escape(status), r.scenario.datacenters.size(), r.ranks_per_dc,
                     mean ? fmt::format("{:.1f}", 1e3 * *mean) : std::string("–"));
    for (const auto& c : runs) {
      const double base = mx::mean_step_s(*c.run);
      h += fmt::format("<td class=\"num\">{}</td>", mean && base > 0 ? fmt::format("{:.3f}", *mean / base) : std::string("–"));
    }
    h += fmt::format("<td class=\"num\">{:.1f} s</td></tr>\n", r.wall_s);
    plot::LineSeries s{label + " " + key, "#000000", kDashes[j % std::size(kDashes)], {}, {}, true, true};
    for (const auto& [x, y] : mx::job_metric_series(r, key)) {
      s.x.push_back(x);
      s.y.push_back(1e3 * y);
    }
    if (!s.x.empty()) chart.series.push_back(std::move(s));
    for (const auto& l : r.links) {
      std::string drops;
      for (const auto& [cause, n] : l.drops)
        if (n) drops += fmt::format("{}{} {}", drops.empty() ? "" : ", ", cause, n);
      links += fmt::format("<tr><td>{}</td><td>{} → {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
                           "<td class=\"num\">{}</td></tr>\n",
                           xml_escape(label), xml_escape(l.from), xml_escape(l.to), l.frames,
                           plot::format_si(static_cast<double>(l.bytes), "B"), xml_escape(drops.empty() ? "none" : drops),
                           l.changes_applied);
    }
  }
  h += "</table>\n<div class=\"charts\">\n";
  h += figure(plot::render_line_chart(chart), "fig-job-step-time",
              "Seconds per step of each exec'd job as it printed them (GEOTB_METRIC \"step_time_s\", rank 0) and of "
              "every strategy (differences of rank 0's step ends), same step axis.");
  h += "</div>\n<table>\n<tr><th>job</th><th>link</th><th>frames</th><th>bytes (L2)</th><th>drops</th>"
       "<th>timeline changes applied</th></tr>\n" + links + "</table>\n";
  return h;
}

}  // namespace

std::string seed_accuracy_text(const model::StrategyRun& run) {
  const auto sum = mx::seed_summary(run.seeds);
  if (!sum) return "–";
  return fmt::format("{:.4f} ± {:.4f} ({} seeds)", sum->final_test_accuracy.mean, sum->final_test_accuracy.sd,
                     sum->seeds);
}

std::string time_to_accuracy_text(const model::StrategyRun& run) {
  const auto& t = run.metrics.time_to_accuracy;
  if (!t) return "–";
  const auto sum = mx::seed_summary(run.seeds);
  if (sum && sum->time_to_accuracy_s) {
    const model::Spread& x = *sum->time_to_accuracy_s;
    if (x.n == 0) return fmt::format("{:.1f} % not reached in {} seeds", 100 * t->target, sum->seeds);
    return fmt::format("{:.1f} %: {:.2f} ± {:.2f} s, {} samples ({} of {} seeds)", 100 * t->target, x.mean, x.sd,
                       plot::format_si(sum->samples_to_accuracy->mean, ""), x.n, sum->seeds);
  }
  if (!t->seconds) return fmt::format("{:.1f} % not reached", 100 * t->target);
  return fmt::format("{:.1f} %: {:.2f} s, {} samples", 100 * t->target, *t->seconds,
                     plot::format_si(static_cast<double>(*t->samples), ""));
}

std::vector<ComparedRun> compared_runs(const std::vector<model::RunReport>& reports,
                                       const std::string& baseline_strategy) {
  std::vector<ComparedRun> out;
  const std::map<std::string, RunStyle> styles = strategy_styles(reports);
  for (size_t i = 0; i < reports.size(); ++i)
    for (const auto& s : reports[i].strategies) {
      ComparedRun c;
      c.report = &reports[i];
      c.run = &s;
      c.baseline = reports[i].find(baseline_strategy);
      c.report_index = i;
      c.label = reports.size() > 1 ? fmt::format("{} (run {})", s.name, i + 1) : s.name;
      const RunStyle& st = styles.at(s.name);
      c.color = st.color;
      c.dash = !st.dash.empty() ? st.dash : kDashes[i % std::size(kDashes)];
      out.push_back(std::move(c));
    }
  return out;
}

std::vector<std::pair<std::string, std::string>> key_results(const std::vector<ComparedRun>& runs,
                                                             const std::string& baseline) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : runs) {
    if (!c.baseline || c.baseline == c.run) continue;
    const model::StrategyMetrics& s = c.run->metrics;
    const model::StrategyMetrics& b = c.baseline->metrics;
    std::string wan;
    if (b.wan_payload_bytes > 0)
      wan = fmt::format(" with {:.3g} % of its WAN bytes ({} instead of {})", 100.0 * mx::wan_bytes_ratio(s, b),
                        plot::format_si(static_cast<double>(s.wan_payload_bytes), "B"),
                        plot::format_si(static_cast<double>(b.wan_payload_bytes), "B"));
    std::string text = fmt::format("{:.2f}× the throughput of {}{}, final test accuracy {:.4f} ({:+.2f} points).",
                                   mx::throughput_ratio(s, b), baseline, wan, s.final_test_accuracy,
                                   100 * mx::accuracy_delta(s, b));
    const auto sum = mx::seed_summary(c.run->seeds), bsum = mx::seed_summary(c.baseline->seeds);
    if (sum && bsum)
      text += fmt::format(" Over {} seeds: accuracy {:.4f} ± {:.4f} against {:.4f} ± {:.4f} ({:+.2f} points in the mean).",
                          sum->seeds, sum->final_test_accuracy.mean, sum->final_test_accuracy.sd,
                          bsum->final_test_accuracy.mean, bsum->final_test_accuracy.sd,
                          100 * (sum->final_test_accuracy.mean - bsum->final_test_accuracy.mean));
    if (s.time_to_accuracy) text += " Time to accuracy " + time_to_accuracy_text(*c.run) + ".";
    if (mx::comm_compute_alarm(s.comm_compute_ratio))
      text += fmt::format(" comm/compute {:.3g} > {:g}: alarm.", s.comm_compute_ratio, mx::kCommComputeAlarm);
    out.emplace_back(c.label, text);
  }
  return out;
}

std::vector<AsyncSiteRow> asynchrony_rows(const std::vector<ComparedRun>& runs) {
  std::vector<AsyncSiteRow> rows;
  for (const auto& c : runs) {
    if (!c.run->asynchrony) continue;
    const model::AsyncSection& a = *c.run->asynchrony;
    const auto& dcs = c.report->scenario.datacenters;
    for (const auto& site : a.sites) {
      std::string hist;
      for (size_t k = 0; k < site.staleness_histogram.size(); ++k)
        if (site.staleness_histogram[k] > 0)
          hist += fmt::format("{}s={}: {}", hist.empty() ? "" : ", ", k, site.staleness_histogram[k]);
      rows.push_back({c.label,
                      site.dc >= 0 && static_cast<size_t>(site.dc) < dcs.size() ? dcs[static_cast<size_t>(site.dc)].name
                                                                                 : std::to_string(site.dc),
                      std::to_string(site.steps), std::to_string(site.rounds), hist.empty() ? "–" : hist,
                      fmt::format("{} ({})", site.max_staleness_observed,
                                  a.max_staleness ? fmt::format("bound {}", *a.max_staleness) : "no bound"),
                      fmt::format("{:.3f}", site.wait_at_bound_s)});
    }
  }
  return rows;
}

/// Asynchronous runs: each site's staleness and waits (a table), and the sites' models apart over
/// time (relative L2 distance to their mean). Empty when no run was asynchronous.
static std::string asynchrony_html(const std::vector<ComparedRun>& runs) {
  const std::vector<AsyncSiteRow> rows = asynchrony_rows(runs);
  if (rows.empty()) return "";
  std::string h =
      "<h2>Asynchrony</h2>\n<table>\n<tr><th>strategy</th><th>site</th><th>steps</th><th>rounds</th>"
      "<th>updates applied by staleness s (rounds late)</th><th>max s</th><th>waited at the bound (s)</th></tr>\n";
  for (const auto& r : rows)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     xml_escape(r.label), xml_escape(r.site), r.steps, r.rounds, xml_escape(r.histogram),
                     xml_escape(r.max_staleness), r.wait_s);
  h += "</table>\n";
  plot::LineChartSpec div;
  div.id = "async-divergence";
  div.title = "Sites' models apart (asynchronous strategies)";
  div.x = {.title = "time since the strategy's start", .unit = "s", .include_zero = true};
  div.y = {.title = "max over sites of ||x_d - mean|| / ||mean||", .unit = "", .include_zero = true};
  for (const auto& c : runs) {
    if (!c.run->asynchrony || c.run->asynchrony->divergence.empty()) continue;
    plot::LineSeries l{c.label, c.color, c.dash, {}, {}};
    for (const auto& d : c.run->asynchrony->divergence) {
      l.x.push_back(d.t_s);
      l.y.push_back(d.relative_l2);
    }
    div.series.push_back(std::move(l));
  }
  if (!div.series.empty())
    h += "<div class=\"charts\">\n" +
         figure(plot::render_line_chart(div), "fig-async-divergence",
                "Each site's model after its last round by then, against the mean of the sites' models: the largest "
                "relative L2 distance. The sites' anchors are their own, so their models drift apart between the "
                "updates they apply; the final synchronous average makes them identical after the last point "
                "(docs/guide/strategies.md, \"async_ef_topk_int8\").") +
         "</div>\n";
  return h;
}

namespace {
std::string mean_sd_text(const std::vector<double>& v) {
  if (v.empty()) return "–";
  const model::Spread s = mx::spread(v);
  return fmt::format("{:.3f} ± {:.3f}", s.mean, s.sd);
}
}  // namespace

std::vector<EstimateRow> estimate_rows(const std::vector<ComparedRun>& runs) {
  std::vector<EstimateRow> rows;
  for (const auto& c : runs) {
    if (!c.run->faults || !c.run->faults->estimate) continue;
    const auto& f = *c.run->faults;
    std::vector<double> cs, re, scs, sre;
    for (const auto& r : f.estimates) {
      cs.push_back(r.cosine);
      re.push_back(r.rel_error);
      scs.push_back(r.shrink_cosine);
      sre.push_back(r.shrink_rel_error);
    }
    const std::string policy = f.estimate->weights == "last_gradient" && f.estimate->decay != 1
                                   ? fmt::format("last_gradient (decay {:g})", f.estimate->decay)
                                   : f.estimate->weights;
    rows.push_back({c.label, policy, std::to_string(f.estimates.size()), mean_sd_text(cs), mean_sd_text(re),
                    mean_sd_text(scs), mean_sd_text(sre)});
  }
  return rows;
}

std::vector<QuorumRow> quorum_rows(const std::vector<ComparedRun>& runs) {
  std::vector<QuorumRow> rows;
  for (const auto& c : runs) {
    if (!c.run->quorum) continue;
    const auto& dcs = c.report->scenario.datacenters;
    std::string changes;
    for (size_t i = 1; i < c.run->quorum->decisions.size(); ++i) {  // the first decision is everyone
      const model::QuorumDecision& d = c.run->quorum->decisions[i];
      std::string sites;
      for (int x : d.sites)
        sites += (sites.empty() ? "" : ", ") +
                 (x >= 0 && static_cast<size_t>(x) < dcs.size() ? dcs[static_cast<size_t>(x)].name : std::to_string(x));
      changes += fmt::format("{}round {} (after step {}) at {:.2f} s: {}", changes.empty() ? "" : "; ", d.round, d.step,
                             d.at_s, sites);
    }
    rows.push_back({c.label, fmt::format("{:g} s", c.run->quorum->timeout_s), changes.empty() ? "no change" : changes});
  }
  return rows;
}

/// Runs with a quorum of sites: when the sites a round ran with changed.
static std::string quorum_html(const std::vector<ComparedRun>& runs) {
  const std::vector<QuorumRow> rows = quorum_rows(runs);
  if (rows.empty()) return "";
  std::string h = "<h2>Quorum of sites</h2>\n<table>\n<tr><th>strategy</th><th>timeout</th><th>changes of the sites a "
                  "round runs with</th></tr>\n";
  for (const auto& r : rows)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", xml_escape(r.label), r.timeout,
                     xml_escape(r.changes));
  return h + "</table>\n";
}

/// Runs under policy "estimate": the estimates against the truth (a table), and their cosine to
/// the truth step by step, with the survivors' mean (shrink's implicit estimate) of the first.
static std::string estimates_html(const std::vector<ComparedRun>& runs) {
  const std::vector<EstimateRow> rows = estimate_rows(runs);
  if (rows.empty()) return "";
  std::string h =
      "<h2>Dead workers' gradients: estimate against the truth</h2>\n<table>\n<tr><th>strategy</th><th>policy</th>"
      "<th>estimated steps</th><th>cos(estimate, truth)</th><th>|estimate − truth| / |truth|</th>"
      "<th>cos(survivors' mean, truth)</th><th>|survivors' mean − truth| / |truth|</th></tr>\n";
  for (const auto& r : rows)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     xml_escape(r.label), xml_escape(r.policy), r.steps, r.cosine, r.rel_error, r.shrink_cosine,
                     r.shrink_rel_error);
  h += "</table>\n";
  plot::LineChartSpec q;
  q.id = "estimate-quality";
  q.title = "Estimated gradient of the dead against its truth";
  q.x = {.title = "step", .unit = "", .include_zero = false};
  q.y = {.title = "cos(estimate, true gradient)", .unit = "", .include_zero = true};
  bool shrink_drawn = false;
  for (const auto& c : runs) {
    if (!c.run->faults || !c.run->faults->estimate || c.run->faults->estimates.empty()) continue;
    // Per step: the mean over the dead workers estimated at that step.
    std::map<int, std::pair<double, int>> est, sh;
    for (const auto& r : c.run->faults->estimates) {
      est[r.step].first += r.cosine, ++est[r.step].second;
      sh[r.step].first += r.shrink_cosine, ++sh[r.step].second;
    }
    plot::LineSeries l{c.label, c.color, c.dash, {}, {}};
    for (const auto& [step, v] : est) l.x.push_back(step), l.y.push_back(v.first / v.second);
    q.series.push_back(std::move(l));
    if (!shrink_drawn) {
      plot::LineSeries s{c.label + ": survivors' mean (shrink)", "#777777", "4 3", {}, {}};
      for (const auto& [step, v] : sh) s.x.push_back(step), s.y.push_back(v.first / v.second);
      q.series.push_back(std::move(s));
      shrink_drawn = true;
    }
  }
  h += "<div class=\"charts\">\n" +
       figure(plot::render_line_chart(q), "fig-estimate-quality",
              "Every step after a death until its restart: the cosine between the gradient that stood in for the dead "
              "worker and the one it would have computed on its own batch from its group's parameters (computed for "
              "the report only; docs/guide/faults.md, policy \"estimate\"). The dashed line is shrink's implicit "
              "estimate, the survivors' mean, in the first such run.") +
       "</div>\n";
  return h;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string common_scenario_name(const std::vector<model::RunReport>& reports) {
  if (reports.empty()) return "no reports";
  for (const auto& r : reports)
    if (r.scenario.name != reports.front().scenario.name) return "several scenarios";
  return reports.front().scenario.name;
}

/// "K": "auto" runs: K per round against time, beside the WAN links' bandwidth over the same
/// span (the scenario timeline's changes). Empty when no run adapted K.
std::string adaptive_k_html(const std::vector<model::RunReport>& reports, const std::vector<ComparedRun>& runs) {
  plot::LineChartSpec k_chart, bw;
  k_chart.id = "adaptive-k";
  k_chart.title = "K per round (\"K\": \"auto\")";
  k_chart.x = {.title = "time since the first step", .unit = "s", .include_zero = true};
  k_chart.y = {.title = "K (steps until the next round)", .unit = "steps", .include_zero = true};
  double end = 0;
  for (const auto& c : runs) {
    const model::StrategyRun& s = *c.run;
    if (!s.series.step_end_s.empty()) end = std::max(end, s.series.step_end_s.back());
    plot::LineSeries k{c.label, c.color, c.dash, {}, {}};
    for (const auto& e : s.exchanges) {
      if (e.K <= 0 || e.step < 0 || static_cast<size_t>(e.step) >= s.series.step_end_s.size()) continue;
      const double t = s.series.step_end_s[static_cast<size_t>(e.step)];
      if (!k.y.empty()) {  // a step line: the previous K holds until this round
        k.x.push_back(t);
        k.y.push_back(k.y.back());
      }
      k.x.push_back(t);
      k.y.push_back(e.K);
    }
    if (!k.x.empty()) {
      k.x.push_back(s.series.step_end_s.back());
      k.y.push_back(k.y.back());
      k_chart.series.push_back(std::move(k));
    }
  }
  if (k_chart.series.empty()) return "";
  k_chart.x.fixed_lo = 0;  // both charts over the same span: the longest run
  k_chart.x.fixed_hi = end;
  bw.id = "wan-bandwidth";
  bw.title = "WAN bandwidth (scenario timeline)";
  bw.x = k_chart.x;
  bw.y = {.title = "bandwidth", .unit = "bit/s", .scale = plot::Scale::kLog, .si_prefix = true};
  static const char* kColours[] = {"#000000", "#7f7f7f", "#8c564b", "#bcbd22"};
  const std::vector<model::WanLinkSummary>& wan = reports.front().scenario.wan;
  for (size_t i = 0; i < wan.size(); ++i) {
    const model::WanLinkSummary& w = wan[i];
    plot::LineSeries l{w.a + " – " + w.b, kColours[i % std::size(kColours)], kDashes[i % std::size(kDashes)], {0}, {w.bandwidth_bps}};
    for (const auto& [at, bps] : w.bandwidth_changes) {
      if (at > end) break;
      l.x.insert(l.x.end(), {at, at});
      l.y.insert(l.y.end(), {l.y.back(), bps});
    }
    l.x.push_back(end);
    l.y.push_back(l.y.back());
    bw.series.push_back(std::move(l));
  }
  return "<h2>Adaptive K</h2>\n<div class=\"charts\">\n" +
         figure(plot::render_line_chart(k_chart), "fig-adaptive-k",
                "The K each round decided (steps until the next round) against time: it grows at once when the "
                "measured exchange no longer hides behind K steps, and halves after two rounds that need at most half "
                "(docs/guide/strategies.md, \"Adaptive K\").") +
         figure(plot::render_line_chart(bw), "fig-wan-bandwidth",
                "Each WAN link's bandwidth over the same span, from the scenario's timeline (a to b; a change applies "
                "to both directions).") +
         "</div>\n";
}

std::string render_html_report(const std::vector<model::RunReport>& reports, const std::string& baseline,
                               const std::vector<model::ExecReport>& jobs) {
  const std::vector<ComparedRun> runs = compared_runs(reports, baseline);
  const std::string name = common_scenario_name(reports);
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<title>geotb compare: {}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>geotb compare: {}</h1>\n",
      xml_escape(name), css(), xml_escape(name));
  html += header_html(reports);
  html += "<h2>Summary</h2>\n<ul class=\"key\">\n";
  for (const auto& [label, text] : key_results(runs, baseline))
    html += fmt::format("<li><b>{}</b>: {}</li>\n", xml_escape(label), xml_escape(text));
  html += "</ul>\n" + seeds_table(runs, baseline) + "<h2>Metrics</h2>\n" + metrics_table(runs, baseline);

  // --- convergence ---
  size_t max_steps = 1;
  for (const auto& c : runs) max_steps = std::max(max_steps, c.run->series.loss.size());
  const size_t window = std::max<size_t>(1, max_steps / 40);
  plot::LineChartSpec by_time, by_samples, acc;
  by_time.id = "loss-time";
  by_time.title = "Training loss vs wall time";
  by_time.x = {"wall time since the first step", "s"};
  by_time.y = {"training loss (cross-entropy)", "nats"};
  by_samples.id = "loss-samples";
  by_samples.title = "Training loss vs samples";
  by_samples.x = {.title = "training samples (whole cluster)", .unit = "samples", .si_prefix = true, .include_zero = true};
  by_samples.y = by_time.y;
  acc.id = "accuracy-samples";
  acc.title = "Test accuracy vs samples";
  acc.x = by_samples.x;
  acc.y = {"test accuracy (rank 0's model)", "%"};
  for (const auto& c : runs) {
    const model::StrategyRun& s = *c.run;
    const std::vector<double> loss = trailing_mean(s.series.loss, window);
    plot::LineSeries t{c.label, c.color, c.dash, s.series.step_end_s, loss};
    by_time.series.push_back(t);
    plot::LineSeries n{c.label, c.color, c.dash, {}, loss};
    const double per_step = mx::samples_per_step(s);
    for (size_t i = 0; i < loss.size(); ++i) n.x.push_back(static_cast<double>(i + 1) * per_step);
    by_samples.series.push_back(std::move(n));
    // Node faults: a band per event in the strategy's colour, from when it took effect to when
    // the survivors resumed (a kill) or the worker was fast again (slow).
    if (s.faults)
      for (const model::FaultRecord& f : s.faults->events) {
        const std::string label = fmt::format("{} rank {} ({})", f.event, f.rank, c.label);
        double end = f.at_s;
        if (f.event == "kill" && f.detected_at_s) end = *f.detected_at_s + f.recovery_s.value_or(0);
        if (f.event == "slow") end = f.until_s.value_or(s.metrics.wall_s);
        by_time.xbands.push_back({f.at_s, end, label, c.color});
        double end_step = f.step + std::max(1, f.steps_lost);
        if (f.event == "slow" && f.until_s) {
          end_step = f.step;
          for (size_t i = 0; i < s.series.step_end_s.size(); ++i)
            if (s.series.step_end_s[i] <= *f.until_s) end_step = static_cast<double>(i + 1);
        }
        by_samples.xbands.push_back({f.step * per_step, end_step * per_step, label, c.color});
      }
    plot::LineSeries a{c.label, c.color, c.dash, {}, {}, true, true, c.report_index % 2 == 1};
    for (const auto& p : s.series.test_accuracy) {
      a.x.push_back(static_cast<double>(p.samples));
      a.y.push_back(100 * p.accuracy);
    }
    acc.series.push_back(std::move(a));
  }
  const std::string smooth = window > 1 ? fmt::format(" Loss is the trailing mean over {} steps.", window) : "";
  html += "<h2>Convergence</h2>\n<div class=\"charts\">\n";
  html += figure(plot::render_line_chart(by_time), "fig-loss-time",
                 "Mean training loss over the workers, at the end of each step, against wall time: what a user waits "
                 "for." + smooth);
  html += figure(plot::render_line_chart(by_samples), "fig-loss-samples",
                 "The same loss against training samples processed: the statistical cost of a strategy, "
                 "independent of speed." + smooth);
  html += figure(plot::render_line_chart(acc), "fig-accuracy",
                 "Test accuracy of rank 0's model at evenly spaced steps (evaluated after the run, so timing is "
                 "unaffected).");
  if (any_seeds(runs)) {
    // The spread over seeds: every seed's final accuracy, one marker each (`geotb run --seeds N`).
    plot::LineChartSpec per_seed;
    per_seed.id = "accuracy-seeds";
    per_seed.title = "Final test accuracy per seed";
    per_seed.x = {"seed", "seed"};
    per_seed.x.integer_ticks = true;
    per_seed.y = {"final test accuracy", "%"};
    for (const auto& c : runs) {
      if (c.run->seeds.empty()) continue;
      plot::LineSeries a{c.label, c.color, c.dash, {}, {}, false, true, c.report_index % 2 == 1};
      for (const auto& r : c.run->seeds) {
        a.x.push_back(static_cast<double>(r.seed));
        a.y.push_back(100 * r.final_test_accuracy);
      }
      per_seed.series.push_back(std::move(a));
    }
    html += figure(plot::render_line_chart(per_seed), "fig-accuracy-seeds",
                   "Final test accuracy of every seed's run (the scenario's seed, seed + 1, ...: initial weights, data "
                   "partition and order, link random streams); the table gives mean ± sample sd.");
  }
  html += "</div>\n";
  html += adaptive_k_html(reports, runs);
  html += asynchrony_html(runs);
  html += estimates_html(runs);
  html += quorum_html(runs);

  // --- speed ---
  plot::BarChartSpec thr;
  thr.id = "throughput";
  thr.title = "Throughput";
  thr.value_axis = {.title = "training samples per second, whole cluster", .unit = "samples/s", .si_prefix = true};
  thr.layers = {{"", "#0072B2"}};
  for (const auto& c : runs) {
    const model::StrategyMetrics& m = c.run->metrics;
    plot::HBar b{c.label, {m.samples_per_s}, c.color, {}, {}};
    b.annotation = plot::format_si(m.samples_per_s, "");
    if (c.baseline && c.baseline != c.run)
      b.annotation += fmt::format("  ({:.2f}× {})", mx::throughput_ratio(m, c.baseline->metrics), baseline);
    else if (c.baseline == c.run)
      b.annotation += "  (baseline)";
    b.tooltip = fmt::format("{}: {:.0f} samples/s", c.label, m.samples_per_s);
    thr.bars.push_back(std::move(b));
  }
  plot::BarChartSpec step;
  step.id = "step-time";
  step.title = "Time per step";
  step.value_axis = {"time per step, mean over workers", "ms"};
  step.layers = {{"compute", "#4C9F70"},
                 {"compression (compress, decompress, re-base)", "#A6761D"},
                 {"exposed communication (waited for)", "#D55E00"},
                 {"overlapped communication (hidden under compute)", "#0072B2", true}};
  for (const auto& c : runs) {
    const model::StrategyMetrics& s = c.run->metrics;
    plot::HBar b{c.label,
                 {1e3 * s.compute_s_per_step, 1e3 * s.compress_s_per_step, 1e3 * s.exposed_comm_s_per_step,
                  1e3 * s.overlapped_comm_s_per_step},
                 {}, fmt::format("comm/compute {:.2f}", s.comm_compute_ratio), c.label};
    step.bars.push_back(std::move(b));
  }
  html += "<h2>Speed</h2>\n<div class=\"charts\">\n";
  html += figure(plot::render_bar_chart(thr), "fig-throughput",
                 fmt::format("Samples per second of wall time (first step start to every replica final); speed-up "
                             "over {} of the same run in brackets.",
                             baseline));
  html += figure(plot::render_bar_chart(step), "fig-step-time",
                 "Per worker and step: compute (forward, backward, optimizer), the hierarchical strategies' compression "
                 "work on the critical path, communication the step waited for, "
                 "and communication in flight while the leader computed (not on the critical path).");
  html += "</div>\n";

  // --- WAN ---
  plot::BarChartSpec wan;
  wan.id = "wan-bytes";
  wan.title = "WAN traffic per run";
  wan.value_axis = {.title = "payload bytes between data centers", .unit = "B", .scale = plot::Scale::kLog, .si_prefix = true, .unit_in_ticks = true};
  wan.layers = {{"", "#0072B2"}};
  for (const auto& c : runs) {
    const model::StrategyMetrics& s = c.run->metrics;
    plot::HBar b{c.label, {static_cast<double>(s.wan_payload_bytes)}, c.color, {}, {}};
    b.annotation = plot::format_si(static_cast<double>(s.wan_payload_bytes), "B");
    if (s.wan_payload_bytes == 0) b.annotation += "  (nothing crossed the WAN)";
    else if (c.baseline && c.baseline != c.run && c.baseline->metrics.wan_payload_bytes > 0)
      b.annotation += fmt::format("  ({:.3g}× {})", mx::wan_bytes_ratio(s, c.baseline->metrics), baseline);
    b.tooltip = fmt::format("{}: payload {} B, on the wire {} B, {} messages, {} retransmissions", c.label,
                            s.wan_payload_bytes, s.wan_wire_bytes, s.wan_messages, s.wan_retransmissions);
    wan.bars.push_back(std::move(b));
  }
  plot::LineChartSpec eff;
  eff.id = "exchange-efficiency";
  eff.title = "Exchange efficiency";
  eff.x = {"step of the exchange", "step"};
  eff.y = {.title = "efficiency = bound ÷ measured", .unit = "ratio", .scale = plot::Scale::kLog};
  eff.hlines = {{1.0, "1 = the lower bound S/B + RTT/2", "#444"}};
  eff.empty_note = "no strategy logged an inter-DC exchange (naive_ddp's ring steps are not logged as exchanges)";
  size_t logged = 0;
  for (const auto& c : runs) {
    if (c.run->exchanges.empty()) continue;
    plot::LineSeries s{c.label, c.color, c.dash, {}, {}, false, true, c.report_index % 2 == 1};
    for (const auto& e : c.run->exchanges) {
      s.x.push_back(e.step >= 0 ? static_cast<double>(e.step) : static_cast<double>(c.run->series.loss.size()));
      s.y.push_back(mx::exchange_efficiency(e));
    }
    logged += s.x.size();
    eff.series.push_back(std::move(s));
  }
  html += "<h2>WAN</h2>\n<div class=\"charts\">\n";
  html += figure(plot::render_bar_chart(wan), "fig-wan-bytes",
                 fmt::format("Message bytes sent between data centers during the whole run (log scale; on-the-wire "
                             "bytes with headers and retransmissions in the tooltip and the table). Ratio to {} in "
                             "brackets.",
                             baseline));
  html += figure(plot::render_line_chart(eff), "fig-exchange-efficiency",
                 fmt::format("Each logged inter-DC exchange ({} in all; the final dense one at the last step): lower "
                             "bound (S/B + the one-way delay of the link each message crossed, from its sender's "
                             "hand-off) divided by the time from the round's last hand-off until every peer's message "
                             "had arrived (docs/guide/reports.md); 1 is the best possible.",
                             logged));
  html += "</div>\n";
  if (!jobs.empty()) html += jobs_html(jobs, runs);
  html += fmt::format(
      "<p style=\"font-size:12px;color:#777\">Generated by geotb compare from {} report(s); metrics are defined in "
      "docs/guide/reports.md.</p>\n</body>\n</html>\n",
      reports.size());
  return html;
}

}  // namespace geotb::harness
