// Creating and recognising a findings database file.
#include "fuzz/findings/schema.h"

#include "fuzz/findings/records.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace shardfuzz::fuzz::findings {
namespace {

// runs.uid: a random id, so merge_from() recognises a run it has already taken in.
// sightings and replays are the event log; findings is what they add up to (findings_db.h).
constexpr const char* kSchema = R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, label TEXT NOT NULL, started TEXT NOT NULL, finished TEXT,
  torch_version TEXT NOT NULL, profile TEXT NOT NULL);
CREATE TABLE findings(
  signature TEXT PRIMARY KEY, property TEXT NOT NULL, zoo TEXT NOT NULL, shape TEXT NOT NULL,
  first_seen TEXT NOT NULL, last_seen TEXT NOT NULL, first_run INTEGER NOT NULL, last_run INTEGER NOT NULL,
  count INTEGER NOT NULL, torch_version TEXT NOT NULL, profile TEXT NOT NULL,
  reproducer TEXT NOT NULL, reproducer_size INTEGER NOT NULL, reproducer_path TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'fixed')), fixed_run INTEGER);
CREATE TABLE sightings(
  run INTEGER NOT NULL, signature TEXT NOT NULL, seq INTEGER NOT NULL, at TEXT NOT NULL,
  PRIMARY KEY (run, signature, seq));
CREATE INDEX sightings_by_signature ON sightings(signature);
CREATE TABLE replays(
  run INTEGER NOT NULL, signature TEXT NOT NULL, at TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('fails', 'passes', 'unknown')), note TEXT NOT NULL,
  PRIMARY KEY (run, signature));
)sql";

std::string hex32(int32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(v));
  return text;
}

std::string table_names(SQLite::Database& db) {
  SQLite::Statement q(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  std::string names;
  while (q.executeStep()) names += (names.empty() ? "" : ", ") + q.getColumn(0).getString();
  return names;
}

[[noreturn]] void not_ours(const std::string& path, const std::string& why) {
  throw std::runtime_error("findings database " + path + ": not a shardfuzz findings database (" + why + ")");
}

// SQLite does not call the busy handler for the switch to WAL: while another process holds the
// file (opening the same new file at the same moment, as a job's shards do), the pragma fails at
// once with SQLITE_BUSY. Retry it within the same busy timeout every other statement waits out.
void switch_to_wal(SQLite::Database& db) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(2 * pause, std::chrono::milliseconds(50))) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (const SQLite::Exception& e) {
      if (e.getErrorCode() != SQLITE_BUSY || std::chrono::steady_clock::now() + pause > give_up) throw;
    }
    std::this_thread::sleep_for(pause);
  }
}

}  // namespace

void check_findings_file(SQLite::Database& db, const std::string& path) {
  const int32_t app = db.execAndGet("PRAGMA application_id").getInt();
  if (app != kFindingsApplicationId) {
    const std::string tables = table_names(db);
    if (app == 0 && tables.empty()) not_ours(path, "an empty SQLite file");
    not_ours(path, "its application_id is " + hex32(app) + ", not " + hex32(kFindingsApplicationId) +
                       (tables.empty() ? "" : "; its tables: " + tables));
  }
  if (!db.tableExists("schema_version")) not_ours(path, "no schema_version table");
  const SQLite::Column v = db.execAndGet("SELECT max(version) FROM schema_version");
  if (v.isNull()) not_ours(path, "schema_version is empty");
  const int version = v.getInt();
  if (version > kFindingsSchemaVersion)
    throw std::runtime_error("findings database " + path + ": schema_version " + std::to_string(version) +
                             " is newer than this shardfuzz reads (" + std::to_string(kFindingsSchemaVersion) +
                             "); use a newer shardfuzz");
  if (version < 1) not_ours(path, "schema_version " + std::to_string(version));
}

void prepare_writable(SQLite::Database& db, const std::string& path) {
  // WAL: readers never block the writer, and a writer killed mid-transaction leaves frames that the
  // next opener ignores. synchronous=NORMAL (set per connection, findings_db.cpp): a commit survives
  // any crash or kill of the process, and the file is never corrupt; only an OS crash or power loss
  // may roll back the last commits, as it may lose the reproducer files and .campaign.json a
  // campaign writes beside it (renamed into place, not fsync'd). FULL would add an fsync per commit
  // (8 writers x 200 records: 2.5 s -> 5-8 s on the 2-core CI machine) for no gain over them.
  switch_to_wal(db);  // persistent: stored in the file
  db.exec("PRAGMA synchronous = NORMAL");
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  if (db.execAndGet("PRAGMA application_id").getInt() == 0 && table_names(db).empty()) {
    db.exec(kSchema);
    db.exec("INSERT INTO schema_version(version) VALUES (" + std::to_string(kFindingsSchemaVersion) + ")");
    db.exec("PRAGMA application_id = " + std::to_string(kFindingsApplicationId));
  } else {
    check_findings_file(db, path);
  }
  tx.commit();
}

std::string describe_sqlite_error(const std::string& path, const std::string& what, const SQLite::Exception& e) {
  const std::string head = "findings database " + path + ": " + what + ": ";
  switch (e.getErrorCode()) {
    case SQLITE_NOTADB: return head + "not a SQLite database (" + e.what() + ")";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return head + "still locked by another process after " + std::to_string(kBusyTimeoutMs / 1000) + " s (" +
             e.what() + ")";
    case SQLITE_CANTOPEN: return head + "cannot open it (no such folder, or no permission): " + e.what();
    case SQLITE_CORRUPT: return head + "the file is corrupt (" + std::string(e.what()) + ")";
    case SQLITE_READONLY: return head + "cannot write it (" + std::string(e.what()) + ")";
    default: return head + e.what();
  }
}

}  // namespace shardfuzz::fuzz::findings
