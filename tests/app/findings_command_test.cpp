// `shardfuzz findings`: the database as a table or JSON, filtered by status; a missing or foreign
// file is a usage error (exit 2) naming it.
#include "app/exit_codes.h"
#include "app/findings_command.h"
#include "fuzz/findings/findings_db.h"
#include "harness/files/temp_dir.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace shardfuzz::app {
namespace {

std::string make_db(const std::string& dir) {
  const std::string path = dir + "/findings.db";
  fuzz::findings::FindingsDb db(path);
  const int64_t night1 = db.begin_run("night 1", "2.11.0", "torch-2.11");
  for (const char* property : {"liveness", "per_layer_return_to_baseline"}) {
    fuzz::findings::FindingInput f;
    f.property = property;
    f.zoo = "5";
    f.shape = "world 2";
    f.reproducer_json = "{\"schema\": 1}";
    f.reproducer_path = std::string("findings/") + property + ".json";
    db.record(night1, f);
  }
  const int64_t night2 = db.begin_run("night 2", "2.11.0", "torch-2.11");
  db.close_run(night2, [](const fuzz::findings::FindingRow& r) { return std::optional<bool>(r.property != "liveness"); });
  return path;
}

TEST(FindingsCommand, ListsTheDatabaseAsATableOrJsonByStatus) {
  harness::TempDir dir("shardfuzz-findings-command");
  FindingsOptions o;
  o.db = make_db(dir.path());
  std::ostringstream out, err;
  ASSERT_EQ(run_findings(o, out, err), kExitOk) << err.str();
  const std::string table = out.str();
  EXPECT_NE(table.find("STATUS"), std::string::npos) << table;
  EXPECT_NE(table.find("liveness|5|"), std::string::npos) << table;
  EXPECT_NE(table.find("findings/per_layer_return_to_baseline.json"), std::string::npos) << table;
  EXPECT_NE(table.find("holds 2 (1 open, 1 fixed)"), std::string::npos) << table;

  o.json = true;
  o.status = "fixed";
  std::ostringstream json;
  ASSERT_EQ(run_findings(o, json, err), kExitOk) << err.str();
  const nlohmann::json j = nlohmann::json::parse(json.str());
  ASSERT_EQ(j.size(), 1u) << j.dump(2);
  EXPECT_EQ(j[0]["property"], "liveness");
  EXPECT_EQ(j[0]["status"], "fixed");
  EXPECT_EQ(j[0]["count"], 1);
  EXPECT_EQ(j[0]["reproducer"]["schema"], 1);
  EXPECT_TRUE(j[0]["fixed_run"].is_number());
}

TEST(FindingsCommand, AMissingOrForeignDatabaseIsAUsageErrorNamingIt) {
  harness::TempDir dir("shardfuzz-findings-command");
  FindingsOptions o;
  o.db = dir.path() + "/nothing-here.db";
  std::ostringstream out, err;
  EXPECT_EQ(run_findings(o, out, err), kExitUsage);
  EXPECT_NE(err.str().find(o.db + ": no such file"), std::string::npos) << err.str();
  EXPECT_FALSE(std::ifstream(o.db).good()) << "listing created the file";

  o.db = dir.path() + "/notes.txt";
  std::ofstream(o.db) << "not a database at all, just a line of text long enough to hold a header\n";
  std::ostringstream err2;
  EXPECT_EQ(run_findings(o, out, err2), kExitUsage);
  EXPECT_NE(err2.str().find(o.db), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace shardfuzz::app
