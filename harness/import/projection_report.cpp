// Writing the projection's HTML report.
#include "harness/import/projection_report.h"

#include "harness/report/html_report.h"
#include "harness/report/markup.h"

#include <nlohmann/json.hpp>

#include <sstream>

namespace shardfuzz::harness::import {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

nlohmann::json series(const Projection& p) {
  nlohmann::json d = {{"labels", nlohmann::json::array()}, {"baseline", nlohmann::json::array()},
                      {"activations", nlohmann::json::array()}, {"live", nlohmann::json::array()},
                      {"stale", nlohmann::json::array()}, {"device", p.device_memory / kGiB},
                      {"oom", p.out_of_memory ? p.out_of_memory->group : ""}};
  for (const ProjectedLayer& r : p.layers) {
    if (r.rank != 0) continue;
    d["labels"].push_back(r.group);
    d["baseline"].push_back(p.baseline.fixed() / kGiB);
    d["activations"].push_back(r.activations / kGiB);
    d["live"].push_back((r.unsharded + r.pending - r.stale) / kGiB);
    d["stale"].push_back(r.stale / kGiB);
  }
  return d;
}

constexpr const char* kScript = R"(
(function () {
  const d = JSON.parse(document.getElementById('projection-data').textContent);
  const check = document.getElementById('render-check');
  if (typeof Chart === 'undefined') { check.textContent = 'no plot library: table only'; return; }
  const bar = (label, data, colour) => ({type: 'bar', label: label, data: data, stack: 'm', backgroundColor: colour});
  const sets = [bar('baseline (shards, gradients, optimizer)', d.baseline, '#c6dbef'), bar('activations', d.activations, '#a1d99b'),
                bar('unsharded and pending (live)', d.live, '#fdae6b'), bar('stale all-gathers', d.stale, '#d62728')];
  if (d.device > 0) sets.push({type: 'line', label: 'device memory', data: d.labels.map(() => d.device), borderColor: '#222', pointRadius: 0});
  new Chart(document.getElementById('projection'), {data: {labels: d.labels, datasets: sets},
    options: {animation: false, responsive: false,
      plugins: {title: {display: true, text: 'rank 0: GiB at each block\'s post_backward (backward order)'}},
      scales: {x: {stacked: true, ticks: {color: (c) => d.labels[c.index] === d.oom ? '#d62728' : '#444',
                                          callback: (v, i) => (d.labels[i] === d.oom ? '\u25b6 ' : '') + d.labels[i]}},
               y: {stacked: true, beginAtZero: true, title: {display: true, text: 'GiB'}}}}});
  check.textContent = 'rendered 1 chart of ' + d.labels.length + ' layers' + (d.oom ? '; out of memory at ' + d.oom : '');
})();
)";

}  // namespace

std::string projection_html(const Projection& p, const std::string& model, const std::string& recipe, const std::string& profile) {
  const std::string chartjs = chartjs_source();
  const std::string table = projection_table(p);
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>memory projection</title><style>"
        "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}.oom td{background:#fde2e2}</style></head><body>\n"
     << "<h1>Memory projection under " << markup_escaped(profile) << "</h1>\n<p>" << markup_escaped(model) << "</p>\n<p>"
     << markup_escaped(recipe) << "</p>\n<pre>" << markup_escaped(table.substr(0, table.find('\n')))
     << "</pre>\n<p id=\"verdict\">"
     << (p.out_of_memory ? "Out of memory at " + markup_escaped(p.out_of_memory->group) + "'s backward"
                         : p.device_memory > 0 ? "Fits the device" : "No device memory given")
     << "</p>\n<p id=\"render-check\">" << (chartjs.empty() ? "no plot library: table only" : "not rendered (JavaScript off)") << "</p>\n";
  if (!chartjs.empty()) os << "<canvas id=\"projection\" width=\"1400\" height=\"480\"></canvas>\n";
  os << "<details open><summary>rank 0, bytes</summary><table><tr><th>layer</th><th>unsharded</th><th>pending</th><th>stale</th>"
        "<th>activations</th><th>total</th></tr>\n";
  for (const ProjectedLayer& r : p.layers)
    if (r.rank == 0)
      os << "<tr" << (p.out_of_memory && p.out_of_memory->group == r.group ? " class=\"oom\"" : "") << "><td>" << markup_escaped(r.group)
         << "</td><td>" << r.unsharded << "</td><td>" << r.pending << "</td><td>" << r.stale << "</td><td>" << r.activations
         << "</td><td>" << r.total << "</td></tr>\n";
  os << "</table></details>\n<script type=\"application/json\" id=\"projection-data\">" << script_safe(series(p).dump()) << "</script>\n";
  if (!chartjs.empty()) os << "<script>" << script_safe(chartjs) << "</script>\n<script>" << kScript << "</script>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace shardfuzz::harness::import
