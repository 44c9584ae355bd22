// Record-and-replay conformance (`shardfuzz conform --emit`, `--torch-python`): scenarios written
// as standalone PyTorch programs, or recorded on PyTorch through the torch backend's worker (rank
// 0 keeps the conformance trace) and each recording replayed on the native runtime, both timed.
#pragma once

#include "harness/conformance/replay.h"
#include "harness/scenario/scenario.h"

#include <filesystem>
#include <string>
#include <vector>

namespace shardfuzz::harness {

// Writes `scenario` as the standalone program DIR/NAME.py (harness/torch/repro_script.h), `note`
// in its header; throws std::runtime_error "cannot write PATH".
void write_torch_program(const Scenario& scenario, const std::filesystem::path& dir, const std::string& note);

// Each file's scenario (or reproducer's), `repeat` times, named after the file (stem-K when
// repeated). Throws naming the file.
std::vector<Scenario> load_conformance_scenarios(const std::vector<std::string>& files, int repeat);

struct RecordedConformance {
  std::vector<ConformanceResult> results;  // one per scenario, a failed recording a failed result
  double native_seconds = 0;               // per scenario, warm median: the replay with its trace parse
  double torch_seconds = 0;                // per scenario, warm median: the recording
  std::string traces_dir;                  // where the recordings stay
};

// Records every scenario on torch with `python` (torch installed), replays each recording natively.
// Throws when the torch backend itself cannot run.
RecordedConformance record_and_replay(const std::vector<Scenario>& scenarios, const std::string& python);

}  // namespace shardfuzz::harness
