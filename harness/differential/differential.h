// A differential run: one scenario on the native runtime, under the profile that models the
// installed torch, and on that torch through the torch backend; their first divergence
// (divergence.h); and, for a divergence, its attribution: did torch change (it behaves as another
// profile, or as the modelled one with one switch flipped, or it is newer than every profile), or
// is the native model wrong (the modelled torch, and nothing the profiles know explains it)?
#pragma once

#include "harness/backends/backend.h"
#include "harness/differential/divergence.h"
#include "harness/properties/property.h"
#include "runtime/semantics/torch_version.h"

#include <memory>
#include <optional>
#include <string>

namespace shardfuzz::harness::differential {

// The property a divergence fails, as campaigns, reports and JUnit name it.
inline constexpr const char* kMatchesTorch = "matches_torch";

struct DifferentialOptions {
  semantics::TorchModel model;  // the installed torch and the profile that models it
  // "" runs torch as installed; a profile name runs it patched to behave so (the export's
  // emulation: only "torch-2.9", PR #164009 undone), to see a torch change being caught.
  std::string torch_as;
  Tolerance tolerance;
};

struct DifferentialCase {
  Scenario native_scenario;  // under the model's profile
  Scenario torch_scenario;   // under the profile torch ran as
  RunRecord native, torch;
  std::optional<Divergence> divergence;
  std::optional<Verdict> both_fail;  // no divergence, and a property both sides fail
  std::optional<int64_t> layer_bytes_difference;  // largest per-layer CUDA bytes difference; nullopt: not both on CUDA
  double torch_seconds = 0, native_seconds = 0;  // each side's wall clock, run and record included
};

struct Attribution {
  enum class Kind { TorchChanged, NativeModelWrong, PropertyFailedOnBoth };
  Kind kind = Kind::NativeModelWrong;
  std::string explained_by;  // the profile under which the native runtime does what torch did ("" none)
  std::string text;          // one sentence naming the torch version, the profile and the first divergence
  // "torch-changed", "native-model-wrong", "property-failed-on-both": the campaign's finding classes.
  std::string slug() const;
  nlohmann::json to_json() const;
};

class Differential {
 public:
  // Both backends must outlive this. `native` runs the model (usually the threads backend).
  Differential(Backend& torch, Backend& native, DifferentialOptions options);

  const DifferentialOptions& options() const { return options_; }
  // The scenario under the profile torch runs as ("torch-2.11": as installed, whatever its version).
  Scenario torch_scenario(const Scenario& scenario) const;
  Scenario native_scenario(const Scenario& scenario) const;
  // Runs both sides (torch first: the torch backend's exceptions for what it cannot express
  // propagate, as with any backend) and compares them.
  DifferentialCase run(const Scenario& scenario);
  // Why they diverge, or which property both fail. Runs the native side again under each
  // candidate explanation: the model's profile with one switch turned on, then every other
  // released profile.
  Attribution attribute(const DifferentialCase& c);

 private:
  Backend& torch_;
  Backend& native_;
  DifferentialOptions options_;
};

}  // namespace shardfuzz::harness::differential
