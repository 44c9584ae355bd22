// A run as JSON.
#include "harness/report/run_json.h"

#include "harness/run/run_record_json.h"
#include "harness/scenario/scenario_json.h"

namespace shardfuzz::harness {

nlohmann::json run_json(const Scenario& sc, const RunRecord& run, const std::vector<Verdict>& verdicts) {
  nlohmann::json j;
  j["scenario"] = to_json(sc);
  j["error"] = run.error;
  j["backend"] = run.backend;
  for (const auto& v : verdicts)
    j["verdicts"].push_back({{"property", v.property}, {"ok", v.ok}, {"skipped", v.skipped}, {"message", v.message}});
  // Each rank as rank processes send it (harness/run_record_json.h).
  for (const auto& r : run.ranks) j["ranks"].push_back(to_json(r));
  if (run.schedule.scheduled) j["schedule"] = to_json(run.schedule);
  j["fired_faults"] = nlohmann::json::array();
  for (const auto& f : run.fired_faults) j["fired_faults"].push_back(to_json(f));
  return j;
}

}  // namespace shardfuzz::harness
