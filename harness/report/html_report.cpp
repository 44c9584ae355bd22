// The HTML report: data as JSON in the page, drawn by Chart.js; a render check the end-to-end test
// reads back from the DOM.
#include "harness/report/html_report.h"

#include "harness/files/read_file.h"

#include "harness/report/markup.h"
#include "harness/scenario/scenario_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#ifndef SHARDFUZZ_CHARTJS_PATH
#define SHARDFUZZ_CHARTJS_PATH ""
#endif

namespace shardfuzz::harness {
namespace {

using memory::Category;
using memory::Event;

using json = nlohmann::json;

std::string group_label(const std::string& g) { return g.empty() ? "root" : g; }

// The step the plots show: the last one every rank has a backward of.
int plotted_step(const Scenario& sc, const RunRecord& run) {
  for (int step = sc.steps - 1; step >= 0; --step) {
    bool all = !run.ranks.empty();
    for (const RankRecord& r : run.ranks) {
      const auto events = r.events_of_step(step);
      all = all && std::any_of(events.begin(), events.end(),
                               [](const memory::TimelineEvent& e) { return e.event == Event::PostBackward; });
    }
    if (all) return step;
  }
  return -1;
}

// What a group at its post_backward legitimately holds: the ledger without stale all-gathers, plus
// the gradients autograd still holds unreduced (as per_layer_return_to_baseline counts them).
int64_t explained(const memory::TimelineEvent& e) {
  return e.ledger_total() - e.stale_all_gather_bytes() + e.unsharded_grad_bytes;
}

json rank_series(const RankRecord& r, int step, const std::set<std::string>& culprits) {
  std::vector<memory::TimelineEvent> rows;
  for (const auto& e : r.events_of_step(step))
    if (e.event == Event::PostBackward) rows.push_back(e);
  json kinds = json::object();
  const auto pending = static_cast<std::size_t>(memory::BufferKind::PendingAllGather);
  for (int k = 0; k < memory::kBufferKinds; ++k) {
    json values = json::array();
    bool any = false;
    for (const auto& e : rows) {
      int64_t v = e.ledger[static_cast<std::size_t>(k)];
      if (static_cast<std::size_t>(k) == pending) v -= e.stale_all_gather_bytes();
      any = any || v != 0;
      values.push_back(v);
    }
    if (any) kinds[memory::to_string(static_cast<memory::BufferKind>(k))] = values;
  }
  json labels = json::array(), stale = json::array(), allocator = json::array(), expected = json::array(),
       culprit = json::array(), stale_groups = json::array();
  for (const auto& e : rows) {
    labels.push_back(group_label(e.group));
    stale.push_back(e.stale_all_gather_bytes());
    allocator.push_back(e.allocated_bytes);
    const int64_t change = explained(e) - explained(rows.front());
    const int64_t tolerance =
        Tolerances::kLayerGrowthBytes + static_cast<int64_t>(Tolerances::kLayerGrowthFraction * std::llabs(change));
    expected.push_back(rows.front().allocated_bytes + change + tolerance);
    // The culprit's own row, and every row at which a finished group still holds a stale all-gather.
    culprit.push_back(culprits.count(e.group) > 0 || !e.stale_all_gathers().empty());
    stale_groups.push_back(e.stale_all_gathers());
  }
  return {{"rank", r.rank}, {"step", step + 1},        {"labels", labels},     {"kinds", kinds},
          {"stale", stale}, {"allocator", allocator}, {"expected", expected}, {"culprit", culprit},
          {"stale_groups", stale_groups}};
}

// The scenario as nested lists: each module with its fully_shard options and, for blocks, their spec.
std::string scenario_tree(const Scenario& sc) {
  const json j = to_json(sc);
  std::ostringstream os;
  int prev = -1;
  for (const std::string& path : sc.module_paths()) {
    const int d = path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
    if (d > prev) {
      for (int k = prev; k < d; ++k) os << "<ul>";
    } else {
      os << "</li>";
      for (int k = d; k < prev; ++k) os << "</ul></li>";
    }
    prev = d;
    const std::string name = path.empty() ? "root" : path.substr(path.rfind('.') + 1);
    os << "<li><code>" << markup_escaped(name) << "</code>";
    if (j.contains("fully_shard") && j["fully_shard"].contains(path))
      os << " <span class=\"group\">fully_shard " << markup_escaped(j["fully_shard"][path].dump()) << "</span>";
    if (path.rfind("layers.", 0) == 0 && std::count(path.begin(), path.end(), '.') == 1) {
      const auto index = static_cast<std::size_t>(std::stoi(path.substr(7)));
      if (index < j["blocks"].size()) os << " <span class=\"block\">" << markup_escaped(j["blocks"][index].dump()) << "</span>";
    }
  }
  if (prev >= 0) {
    os << "</li>";
    for (int k = 0; k < prev; ++k) os << "</ul></li>";
    os << "</ul>";
  }
  return os.str();
}

constexpr const char* kStyle = R"(body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1200px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}code,pre{font-family:ui-monospace,monospace}
pre{background:#f5f5f5;padding:8px;white-space:pre-wrap}.fail{color:#b00020}.pass{color:#1b7f2a}.skip{color:#777}
.group{color:#1f5fa8}.block{color:#6b4c9a}ul{margin:2px 0 2px 18px;padding:0}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#eee}.culprit td{background:#fde2e2}canvas{max-width:100%})";

// Draws one chart per rank, then writes what it drew into #render-check (the end-to-end test reads
// it back from the DOM): how many canvases hold pixels, and which x labels are marked culprits.
constexpr const char* kScript = R"(
(function () {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const check = document.getElementById('render-check');
  if (typeof Chart === 'undefined') { check.textContent = 'no plot library: tables only'; return; }
  const colours = ['#9ecae1', '#fdae6b', '#a1d99b', '#bcbddc', '#fdd0a2', '#c7e9c0', '#dadaeb', '#fcbba1', '#d9d9d9', '#c6dbef', '#e5f5e0'];
  let drawn = 0; const marked = new Set();
  for (const r of data.ranks) {
    const canvas = document.getElementById('rank-' + r.rank);
    const datasets = Object.entries(r.kinds).map(([kind, values], i) => (
      {type: 'bar', label: 'ledger: ' + kind, data: values, stack: 'ledger', backgroundColor: colours[i % colours.length]}));
    datasets.push({type: 'bar', label: 'stale all-gathers', data: r.stale, stack: 'ledger', backgroundColor: '#d62728'});
    datasets.push({type: 'line', label: 'allocator bytes', data: r.allocator, borderColor: '#222', backgroundColor: '#222', tension: 0});
    datasets.push({type: 'line', label: 'expected bound', data: r.expected, borderColor: '#2ca02c', borderDash: [6, 4], pointRadius: 0});
    datasets.push({type: 'line', label: 'culprit', showLine: false, pointStyle: 'triangle', pointRadius: 10,
                   backgroundColor: '#d62728', borderColor: '#d62728',
                   data: r.allocator.map((v, i) => r.culprit[i] ? v : null)});
    new Chart(canvas, {
      data: {labels: r.labels, datasets: datasets},
      options: {animation: false, responsive: false,
        plugins: {title: {display: true, text: 'rank ' + r.rank + ', step ' + r.step + ': bytes at each group\'s post_backward (backward order)'}},
        scales: {x: {stacked: true, ticks: {color: (c) => r.culprit[c.index] ? '#d62728' : '#444',
                                            callback: (v, i) => (r.culprit[i] ? '\u25b6 ' : '') + r.labels[i] +
                                              (r.stale_groups[i].length ? ' [stale: ' + r.stale_groups[i].join(', ') + ']' : '')}},
                 y: {stacked: false, beginAtZero: true, title: {display: true, text: 'bytes'}}}}});
    const ctx = canvas.getContext('2d');
    const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) { painted++; if (painted > 1000) break; }
    if (painted > 1000) drawn++;
    r.labels.forEach((l, i) => { if (r.culprit[i]) { marked.add(l); r.stale_groups[i].forEach((g) => marked.add(g)); } });
  }
  check.textContent = 'rendered ' + drawn + ' of ' + data.ranks.length + ' charts; culprit marked: ' +
                      (marked.size ? Array.from(marked).join(', ') : 'none');
})();
)";

}  // namespace

std::vector<std::string> culprit_groups(const RunRecord& run, const std::vector<Verdict>& verdicts) {
  std::set<std::string> stale;
  for (const RankRecord& r : run.ranks)
    for (const auto& e : r.timeline)
      if (e.event == Event::PostBackward)
        for (const std::string& g : e.stale_all_gathers()) stale.insert(g);
  if (!stale.empty()) return {stale.begin(), stale.end()};
  const Verdict* failed = first_failure(verdicts);
  if (!failed) return {};
  std::set<std::string> groups;
  for (const RankRecord& r : run.ranks)
    for (const auto& e : r.timeline)
      if (e.category == Category::Fsdp && !e.group.empty()) groups.insert(e.group);
  std::vector<std::string> named;
  for (const std::string& g : groups) {
    const auto at = failed->message.find(g);
    if (at == std::string::npos) continue;
    const auto end = at + g.size();
    if (end < failed->message.size() && (std::isalnum(static_cast<unsigned char>(failed->message[end])) ||
                                         failed->message[end] == '.' || failed->message[end] == '_'))
      continue;  // "layers.1" inside "layers.10" or "layers.1.moe"
    named.push_back(g);
  }
  std::sort(named.begin(), named.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  if (named.size() > 1) named.resize(1);
  return named;
}

std::string chartjs_source() {
  if (const char* env = std::getenv("SHARDFUZZ_CHARTJS"); env && *env) return read_file_or_empty(env);
  return read_file_or_empty(SHARDFUZZ_CHARTJS_PATH);
}

std::string html_report(const Scenario& sc, const RunRecord& run, const std::vector<Verdict>& verdicts,
                        const std::string& replay_command) {
  const std::vector<std::string> culprits = culprit_groups(run, verdicts);
  const std::set<std::string> culprit_set(culprits.begin(), culprits.end());
  const int step = plotted_step(sc, run);
  json data = {{"ranks", json::array()}};
  if (step >= 0)
    for (const RankRecord& r : run.ranks) data["ranks"].push_back(rank_series(r, step, culprit_set));
  const Verdict* failed = first_failure(verdicts);
  const std::string chartjs = chartjs_source();

  std::ostringstream os;
  const std::string title = (sc.name.empty() ? "scenario" : sc.name) + ": " + (failed ? failed->property : "pass");
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << markup_escaped(title)
     << "</title><style>" << kStyle << "</style></head><body>\n";
  os << "<h1>" << markup_escaped(title) << "</h1>\n<p>world " << sc.world_size << ", profile <code>" << markup_escaped(sc.profile.name)
     << "</code>, " << sc.blocks.size() << " block(s), " << sc.fully_shard.size() << " fully_shard group(s), "
     << sc.steps << " step(s), backend " << markup_escaped(run.backend) << (run.error.empty() ? "" : ", run error: ")
     << markup_escaped(run.error) << "</p>\n";
  if (failed)
    os << "<h2 class=\"fail\">Failed: " << markup_escaped(failed->property) << "</h2>\n<pre id=\"failure\">"
       << markup_escaped(failed->message) << "</pre>\n";
  if (!culprits.empty()) {
    os << "<p id=\"culprit\">Culprit: ";
    for (std::size_t i = 0; i < culprits.size(); ++i) os << (i ? ", " : "") << "<code>" << markup_escaped(culprits[i]) << "</code>";
    os << "</p>\n";
  }
  os << "<h2>Replay</h2>\n<pre id=\"replay\">" << markup_escaped(replay_command) << "</pre>\n";
  os << "<h2>Verdicts</h2>\n<ul>\n";
  for (const Verdict& v : verdicts)
    os << "<li class=\"" << (v.skipped ? "skip" : v.ok ? "pass" : "fail") << "\">" << (v.skipped ? "SKIP" : v.ok ? "PASS" : "FAIL")
       << " <code>" << markup_escaped(v.property) << "</code>" << (v.message.empty() ? "" : ": " + markup_escaped(v.message)) << "</li>\n";
  os << "</ul>\n";
  os << "<h2>Memory during backward, per rank</h2>\n<p id=\"render-check\">"
     << (chartjs.empty() ? "no plot library (install libjs-chart.js, or set SHARDFUZZ_CHARTJS): tables only"
                         : "not rendered (JavaScript off)")
     << "</p>\n";
  if (step < 0) os << "<p>No step with a backward on every rank: nothing to plot.</p>\n";
  for (const auto& r : data["ranks"]) {
    const int rank = r["rank"];
    os << "<h3>Rank " << rank << "</h3>\n";
    if (!chartjs.empty()) os << "<canvas id=\"rank-" << rank << "\" width=\"1100\" height=\"420\"></canvas>\n";
    os << "<details><summary>numbers</summary><table><tr><th>group</th><th>allocator</th><th>expected bound</th>"
          "<th>stale</th><th>stale groups</th></tr>\n";
    for (std::size_t i = 0; i < r["labels"].size(); ++i)
      os << "<tr" << (r["culprit"][i].get<bool>() ? " class=\"culprit\"" : "") << "><td>"
         << markup_escaped(r["labels"][i].get<std::string>()) << "</td><td>" << r["allocator"][i] << "</td><td>"
         << r["expected"][i] << "</td><td>" << r["stale"][i] << "</td><td>" << markup_escaped(r["stale_groups"][i].dump())
         << "</td></tr>\n";
    os << "</table></details>\n";
  }
  os << "<h2>Scenario</h2>\n<div id=\"tree\">" << scenario_tree(sc) << "</div>\n";
  os << "<details><summary>scenario JSON</summary><pre>" << markup_escaped(to_json(sc).dump(1)) << "</pre></details>\n";
  os << "<script type=\"application/json\" id=\"report-data\">" << script_safe(data.dump()) << "</script>\n";
  if (!chartjs.empty()) os << "<script>" << script_safe(chartjs) << "</script>\n<script>" << kScript << "</script>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace shardfuzz::harness
