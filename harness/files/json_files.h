// The *.json files of a folder (hidden ones, such as a campaign's .campaign.json, left out), sorted by name: what replay, conformance and their tests walk.
#pragma once

#include <string>
#include <vector>

namespace shardfuzz::harness {

// Full paths. Throws std::runtime_error naming `what` and the folder when it is missing.
std::vector<std::string> json_files_in(const std::string& dir, const std::string& what);

}  // namespace shardfuzz::harness
