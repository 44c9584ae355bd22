// The version ranges each released profile models.
#include "runtime/semantics/torch_version.h"

#include <regex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace shardfuzz::semantics {
namespace {

using MajorMinor = std::pair<int, int>;

struct Range {
  const char* profile;
  MajorMinor first, last;
};

// Oldest first. torch-2.9 is the last release before PR #164009 (post_forward skips itself inside
// the autograd engine), which shipped in 2.10; torch-2.11 was recorded on 2.11.0 (tests/conformance).
const std::vector<Range>& ranges() {
  static const std::vector<Range> table = {
      {"torch-2.7", {2, 7}, {2, 8}},
      {"torch-2.9", {2, 9}, {2, 9}},
      {"torch-2.11", {2, 10}, {2, 11}},
  };
  return table;
}

}  // namespace

TorchModel model_of_torch(const std::string& version) {
  static const std::regex numbers(R"(^\s*(\d+)\.(\d+)(.*)$)");
  std::smatch m;
  if (!std::regex_match(version, m, numbers))
    throw std::invalid_argument("torch version: '" + version + "' does not start with MAJOR.MINOR");
  const MajorMinor v{std::stoi(m[1].str()), std::stoi(m[2].str())};
  const std::string rest = m[3].str();
  TorchModel model;
  model.version = version;
  model.prerelease = rest.find("dev") != std::string::npos || rest.find("a0") != std::string::npos ||
                     rest.find("+git") != std::string::npos || rest.find("rc") != std::string::npos;
  const auto& table = ranges();
  if (v < table.front().first) {
    model.profile = table.front().profile;
    model.older_than_every_profile = true;
    return model;
  }
  for (const Range& r : table)
    if (v >= r.first && v <= r.last) {
      model.profile = r.profile;
      return model;
    }
  model.profile = table.back().profile;
  model.newer_than_every_profile = v > table.back().last;
  return model;
}

}  // namespace shardfuzz::semantics
