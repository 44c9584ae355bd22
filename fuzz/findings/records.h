// What the findings database holds, as plain data: a finding as a campaign records it, a row of
// the findings table, and the marks a findings file carries (findings_db.h is the database itself;
// rows.h and schema.h, its table's columns and its file, read and write these).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shardfuzz::fuzz::findings {

inline constexpr int kFindingsSchemaVersion = 1;
// PRAGMA application_id of a findings database ("SHFD"): tells it from any other SQLite file.
inline constexpr int32_t kFindingsApplicationId = 0x53484644;

// What a campaign knows of one finding when it records it.
struct FindingInput {
  std::string property;       // the property that failed
  std::string zoo;            // the bug-zoo row or class blamed ("5", "S3", "unattributed", "torch-changed")
  std::string shape;          // structural_shape(minimal)
  std::string torch_version;  // of the machine that found it ("" when none: the native runtime only)
  std::string profile;        // the semantics profile the case ran under
  std::string reproducer_json;  // the reproducer file's text
  std::string reproducer_path;  // where it was written
  int64_t reproducer_size = 0;  // smaller is better; <= 0: the length of reproducer_json
};

enum class FindingStatus { Open, Fixed };
inline const char* status_name(FindingStatus status) { return status == FindingStatus::Fixed ? "fixed" : "open"; }

// One row of the findings table.
struct FindingRow {
  std::string signature, property, zoo, shape;
  std::string first_seen, last_seen;
  int64_t first_run = 0, last_run = 0;
  int64_t count = 0;  // sightings of this signature
  std::string torch_version, profile;  // of the last sighting
  std::string reproducer;              // the smallest reproducer's JSON text
  int64_t reproducer_size = 0;
  std::string reproducer_path;
  FindingStatus status = FindingStatus::Open;
  std::optional<int64_t> fixed_run;  // the run whose replay passed, while status is fixed
};

}  // namespace shardfuzz::fuzz::findings
