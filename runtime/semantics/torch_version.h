// Which profile models an installed torch. Each released profile names the torch versions it was
// checked against (major.minor, inclusive); a torch past every range is modelled by the newest
// profile, flagged as newer, so a differential campaign reports what it sees as "behaviour changed
// since <profile>" rather than as a defect of the native model.
#pragma once

#include <string>

namespace shardfuzz::semantics {

struct TorchModel {
  std::string version;   // as torch reports it: "2.11.0+cu130", "2.12.0.dev20261201"
  std::string profile;   // the profile that models it: "torch-2.11"
  bool newer_than_every_profile = false;  // past the newest profile's range
  bool older_than_every_profile = false;  // before the oldest profile's range (modelled by the oldest)
  bool prerelease = false;  // a dev/nightly/alpha build or a fork ("a0", "dev", "+git"): may differ
                            // from the release its number names
};

// Throws std::invalid_argument naming the version when it does not start with MAJOR.MINOR.
TorchModel model_of_torch(const std::string& version);

}  // namespace shardfuzz::semantics
