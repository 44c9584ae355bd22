// Running both sides and explaining what differs.
#include "harness/differential/differential.h"

#include "runtime/semantics/profile.h"

#include <chrono>

namespace shardfuzz::harness::differential {
namespace {

// The explanations to try, most specific first: the modelled profile with one switch turned on
// (a torch that changed one behaviour), then each other released profile.
std::vector<semantics::Profile> candidate_profiles(const std::string& model) {
  std::vector<semantics::Profile> out;
  const semantics::Profile base = semantics::Profile::named(model);
  for (const auto& s : semantics::Profile::switches())
    if (!(base.*(s.flag))) out.push_back(base.with(s));
  for (const auto& name : semantics::Profile::names())
    if (name != model && name != "strict") out.push_back(semantics::Profile::named(name));
  return out;
}

std::string torch_named(const DifferentialOptions& o) {
  return "torch " + o.model.version + (o.torch_as.empty() ? "" : " (patched to run as " + o.torch_as + ")");
}

}  // namespace

std::string Attribution::slug() const {
  switch (kind) {
    case Kind::TorchChanged: return "torch-changed";
    case Kind::NativeModelWrong: return "native-model-wrong";
    case Kind::PropertyFailedOnBoth: return "property-failed-on-both";
  }
  return "?";
}

nlohmann::json Attribution::to_json() const {
  return {{"kind", slug()}, {"explained_by", explained_by}, {"text", text}};
}

Differential::Differential(Backend& torch, Backend& native, DifferentialOptions options)
    : torch_(torch), native_(native), options_(std::move(options)) {}

Scenario Differential::torch_scenario(const Scenario& scenario) const {
  Scenario sc = scenario;
  sc.profile = semantics::Profile::named(options_.torch_as.empty() ? "torch-2.11" : options_.torch_as);
  return sc;
}

Scenario Differential::native_scenario(const Scenario& scenario) const {
  Scenario sc = scenario;
  sc.profile = semantics::Profile::named(options_.model.profile);
  return sc;
}

DifferentialCase Differential::run(const Scenario& scenario) {
  DifferentialCase c;
  c.torch_scenario = torch_scenario(scenario);
  c.native_scenario = native_scenario(scenario);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  c.torch = torch_.run(c.torch_scenario);
  const auto t1 = Clock::now();
  c.native = native_.run(c.native_scenario);
  c.torch_seconds = std::chrono::duration<double>(t1 - t0).count();
  c.native_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  c.divergence = first_divergence(c.native_scenario, c.native, c.torch_scenario, c.torch, options_.tolerance);
  c.layer_bytes_difference = largest_layer_bytes_difference(c.native, c.torch);
  if (!c.divergence) {
    const std::vector<Verdict> verdicts = check_properties(c.native_scenario, c.native);
    if (const Verdict* f = first_failure(verdicts)) c.both_fail = *f;
  }
  return c;
}

Attribution Differential::attribute(const DifferentialCase& c) {
  Attribution a;
  const std::string torch = torch_named(options_);
  const std::string& model = options_.model.profile;
  if (!c.divergence) {
    a.kind = Attribution::Kind::PropertyFailedOnBoth;
    a.text = c.both_fail ? c.both_fail->property + " fails on both " + torch + " and the native runtime under " + model +
                               ": " + c.both_fail->message
                         : "no divergence and no failing property";
    return a;
  }
  const std::string first = c.divergence->message();
  for (const semantics::Profile& p : candidate_profiles(model)) {
    Scenario sc = c.native_scenario;
    sc.profile = p;
    const RunRecord run = native_.run(sc);
    if (first_divergence(sc, run, c.torch_scenario, c.torch, options_.tolerance)) continue;
    a.kind = Attribution::Kind::TorchChanged;
    a.explained_by = p.name;
    a.text = torch + " changed against the " + model + " profile: here it behaves as " + p.name +
             " (the native runtime under " + p.name + " matches it event for event); " + first;
    return a;
  }
  if (options_.model.newer_than_every_profile || options_.model.prerelease || !options_.torch_as.empty()) {
    a.kind = Attribution::Kind::TorchChanged;
    a.text = "behaviour changed since " + model + ": " + torch +
             (options_.model.newer_than_every_profile ? " is newer than every profile"
              : options_.torch_as.empty()             ? " is not a release"
                                                      : " is patched")
             + ", and no profile switch explains it; " + first;
    return a;
  }
  a.kind = Attribution::Kind::NativeModelWrong;
  a.text = "native model wrong: " + torch + " is what " + model + " models, and no profile or switch makes the "
           "native runtime do what it does; " + first;
  return a;
}

}  // namespace shardfuzz::harness::differential
