// A campaign assembled: its source, runner, session and sinks around the loop.
#include "fuzz/campaign/campaign.h"

#include "fuzz/campaign/findings_db_sink.h"
#include "fuzz/campaign/guidance.h"
#include "fuzz/campaign/loop.h"
#include "fuzz/coverage/edge_map.h"

#include <memory>

namespace shardfuzz::fuzz {
namespace {

// Guidance when the campaign asked for it or the build counts edges (a plain campaign's coverage,
// to compare with); nullptr otherwise, so a plain build's case costs nothing more.
std::unique_ptr<Guidance> guidance_for(const CampaignOptions& options, std::ostream& out) {
  if (!options.coverage_guided && !coverage::instrumented()) return nullptr;
  const std::string corpus =
      !options.coverage_guided ? "" : options.corpus_dir.empty() ? options.out_dir + "/corpus" : options.corpus_dir;
  return std::make_unique<Guidance>(options.gen, corpus, out, options.out_dir);
}

std::string torch_version(const CampaignOptions& options) {
  return options.torch_and_native ? options.torch_and_native->options().model.version : "";
}

}  // namespace

std::optional<std::string> first_failing_property(const harness::Scenario& scenario, std::string* message,
                                                  harness::Backend& backend) {
  CaseRunner runner(backend, std::nullopt);
  CaseCheck c = runner.check(scenario);
  if (message) *message = c.message;
  return c.property;
}

CampaignOptions options_to_resume(const CampaignState& st, const std::string& out_dir) {
  CampaignOptions o;
  static_cast<CampaignPlan&>(o) = st.plan;
  o.out_dir = out_dir;
  o.resume = st;
  return o;
}

CampaignResult run_campaign(const CampaignOptions& options, std::ostream& out, CampaignSink* from_parent) {
  CaseRunner runner(*options.backend, options.isolation);
  if (options.torch_and_native) runner.set_differential(options.torch_and_native.get());
  Session session(options, options.backend->name(), out);
  const std::unique_ptr<Guidance> guidance = guidance_for(options, out);
  GeneratorSource generator(options.gen);
  CampaignFindingsDb db(options, torch_version(options), &runner);
  ProgressLine progress(options, session, out);
  // Told in this order: a parent's claim before anyone else hears of a failing case; the state
  // saved once the database holds the finding; the progress line last.
  LoopParts parts{guidance ? static_cast<CaseSource&>(*guidance) : generator, runner, session, {}};
  if (from_parent) parts.sinks.push_back(from_parent);
  if (guidance) parts.sinks.push_back(guidance.get());
  parts.sinks.insert(parts.sinks.end(), {&db, &session, &progress});
  CampaignResult result = run_loop(options, parts, out);
  if (options.torch_and_native) {
    result.torch_version = torch_version(options);
    result.profile = options.torch_and_native->options().model.profile;
  }
  return result;
}

}  // namespace shardfuzz::fuzz
