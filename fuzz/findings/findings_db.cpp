// The findings database: runs, sightings, replays and the findings they add up to.
#include "fuzz/findings/findings_db.h"

#include "fuzz/findings/rows.h"
#include "fuzz/findings/schema.h"
#include "fuzz/findings/signature.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <stdexcept>

namespace shardfuzz::fuzz::findings {
namespace {

using SQLite::TransactionBehavior;

// 128 random bits: a run's identity across files (merge_from).
std::string new_run_uid() {
  std::random_device rd;
  char text[40];
  std::snprintf(text, sizeof text, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return text;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A known finding seen again: the last sighting's time, run, torch and profile, one more count, open
// again (a regression when it was fixed), and the reproducer when this one is smaller.
void update_seen(SQLite::Database& db, const std::string& sig, int64_t run, const std::string& at,
                 const FindingInput& f, int64_t size, bool smaller) {
  SQLite::Statement u(db,
                      "UPDATE findings SET last_seen = ?, last_run = ?, count = count + 1, torch_version = ?, "
                      "profile = ?, status = 'open', fixed_run = NULL WHERE signature = ?");
  u.bind(1, at);
  u.bind(2, run);
  u.bind(3, f.torch_version);
  u.bind(4, f.profile);
  u.bind(5, sig);
  u.exec();
  if (!smaller) return;
  SQLite::Statement r(db,
                      "UPDATE findings SET reproducer = ?, reproducer_size = ?, reproducer_path = ? WHERE signature = ?");
  r.bind(1, f.reproducer_json);
  r.bind(2, size);
  r.bind(3, f.reproducer_path);
  r.bind(4, sig);
  r.exec();
}

void add_sighting(SQLite::Database& db, int64_t run, const std::string& sig, const std::string& at) {
  SQLite::Statement s(db,
                      "INSERT INTO sightings (run, signature, seq, at) VALUES (?1, ?2, "
                      "(SELECT COALESCE(MAX(seq), 0) + 1 FROM sightings WHERE run = ?1 AND signature = ?2), ?3)");
  s.bind(1, run);
  s.bind(2, sig);
  s.bind(3, at);
  s.exec();
}

// Throws std::invalid_argument for a run not in the file.
void check_run(SQLite::Database& db, const std::string& path, int64_t run) {
  SQLite::Statement q(db, "SELECT 1 FROM runs WHERE id = ?");
  q.bind(1, run);
  if (!q.executeStep())
    throw std::invalid_argument("findings database " + path + ": run " + std::to_string(run) + ": no such run");
}

// Findings matching `where` (SQL over the findings table, with :run bound to `run`).
std::vector<FindingRow> select_rows(SQLite::Database& db, const std::string& where, int64_t run) {
  SQLite::Statement q(db, std::string("SELECT ") + kFindingColumns + " FROM findings WHERE " + where);
  if (where.find(":run") != std::string::npos) q.bind(":run", run);
  std::vector<FindingRow> rows;
  while (q.executeStep()) rows.push_back(read_finding(q));
  return rows;
}

FindingRow new_finding(const std::string& sig, int64_t run, const std::string& at, const FindingInput& f, int64_t size) {
  FindingRow row;
  row.signature = sig;
  row.property = f.property;
  row.zoo = f.zoo.empty() ? "unattributed" : f.zoo;
  row.shape = f.shape;
  row.first_seen = row.last_seen = at;
  row.first_run = row.last_run = run;
  row.count = 1;
  row.torch_version = f.torch_version;
  row.profile = f.profile;
  row.reproducer = f.reproducer_json;
  row.reproducer_size = size;
  row.reproducer_path = f.reproducer_path;
  return row;
}

}  // namespace

std::string iso_utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(ms));
  return text;
}

FindingsDb::FindingsDb(const std::string& path, Access access) : path_(path), access_(access), now_(iso_utc_now) {
  if (access == Access::ReadOnly && !file_exists(path))
    throw std::runtime_error("findings database " + path + ": no such file");
  sqlite_guarded(path_, "open", [&] {
    SQLite::Database db = connect();
    if (access == Access::ReadOnly)
      check_findings_file(db, path_);
    else
      prepare_writable(db, path_);
  });
}

FindingsDb::~FindingsDb() {
  if (access_ == Access::ReadOnly) return;
  try {
    // A read opens the WAL; closing the last connection that has it open checkpoints and removes it.
    connect(true).execAndGet("SELECT count(*) FROM schema_version");
  } catch (const std::exception&) {  // the file went away or stayed locked: the next opener folds it
  }
}

SQLite::Database FindingsDb::connect(bool checkpoint_on_close) const {
  const int flags = access_ == Access::ReadOnly ? SQLite::OPEN_READONLY : SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE;
  SQLite::Database db(path_, flags, kBusyTimeoutMs);
  if (access_ == Access::ReadWrite) db.exec("PRAGMA synchronous = NORMAL");  // schema.cpp says why
  // The last connection to close folds the WAL into the file (a few fsyncs): once, when this object
  // goes, rather than after every operation. Committed rows are safe in the WAL either way.
  if (!checkpoint_on_close) sqlite3_db_config(db.getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  return db;
}

void FindingsDb::set_clock(std::function<std::string()> now) { now_ = std::move(now); }

int64_t FindingsDb::begin_run(const std::string& label, const std::string& torch_version, const std::string& profile) {
  return sqlite_guarded(path_, "begin_run", [&] {
    SQLite::Database db = connect();
    SQLite::Transaction tx(db, TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(db, "INSERT INTO runs (uid, label, started, torch_version, profile) VALUES (?, ?, ?, ?, ?)");
    q.bind(1, new_run_uid());
    q.bind(2, label);
    q.bind(3, now_());
    q.bind(4, torch_version);
    q.bind(5, profile);
    q.exec();
    const int64_t id = db.getLastInsertRowid();
    tx.commit();
    return id;
  });
}

void FindingsDb::finish_run(int64_t run) {
  sqlite_guarded(path_, "finish_run", [&] {
    SQLite::Database db = connect();
    SQLite::Transaction tx(db, TransactionBehavior::IMMEDIATE);
    check_run(db, path_, run);
    SQLite::Statement q(db, "UPDATE runs SET finished = ? WHERE id = ?");
    q.bind(1, now_());
    q.bind(2, run);
    q.exec();
    tx.commit();
  });
}

std::string FindingsDb::record(int64_t run, const FindingInput& f) {
  const std::string sig = finding_signature(f.property, f.zoo, f.shape);
  const int64_t size = f.reproducer_size > 0 ? f.reproducer_size : static_cast<int64_t>(f.reproducer_json.size());
  sqlite_guarded(path_, "record", [&] {
    SQLite::Database db = connect();
    SQLite::Transaction tx(db, TransactionBehavior::IMMEDIATE);
    check_run(db, path_, run);
    const std::string at = now_();
    SQLite::Statement known(db, "SELECT reproducer_size FROM findings WHERE signature = ?");
    known.bind(1, sig);
    if (known.executeStep())
      update_seen(db, sig, run, at, f, size, size < known.getColumn(0).getInt64());
    else
      insert_finding(db, new_finding(sig, run, at, f, size));
    known.reset();
    add_sighting(db, run, sig, at);
    tx.commit();
  });
  return sig;
}

std::vector<FindingRow> FindingsDb::list() const {
  return sqlite_guarded(path_, "read", [&] {
    SQLite::Database db = connect();
    return select_rows(db, "1 ORDER BY last_seen DESC, signature", 0);
  });
}

std::optional<FindingRow> FindingsDb::find(const std::string& signature) const {
  return sqlite_guarded(path_, "read", [&]() -> std::optional<FindingRow> {
    SQLite::Database db = connect();
    SQLite::Statement q(db, std::string("SELECT ") + kFindingColumns + " FROM findings WHERE signature = ?");
    q.bind(1, signature);
    if (!q.executeStep()) return std::nullopt;
    return read_finding(q);
  });
}

void FindingsDb::write_replay(int64_t run, const FindingRow& row, std::optional<bool> still_fails,
                              const std::string& note) {
  sqlite_guarded(path_, "close_run", [&] {
    SQLite::Database db = connect();
    SQLite::Transaction tx(db, TransactionBehavior::IMMEDIATE);
    std::string outcome = !still_fails ? "unknown" : *still_fails ? "fails" : "passes";
    std::string why = note;
    if (outcome == "passes") {
      // Fixed only if nobody saw it while it was replayed (another shard of the night may have).
      SQLite::Statement fix(db,
                            "UPDATE findings SET status = 'fixed', fixed_run = ? WHERE signature = ? AND "
                            "status = 'open' AND last_seen = ?");
      fix.bind(1, run);
      fix.bind(2, row.signature);
      fix.bind(3, row.last_seen);
      if (fix.exec() == 0) {
        outcome = "unknown";
        why = "its replay passed, but it was seen again meanwhile";
      }
    }
    SQLite::Statement q(db, "INSERT OR REPLACE INTO replays (run, signature, at, outcome, note) VALUES (?, ?, ?, ?, ?)");
    q.bind(1, run);
    q.bind(2, row.signature);
    q.bind(3, now_());
    q.bind(4, outcome);
    q.bind(5, why);
    q.exec();
    tx.commit();
  });
}

FindingsDb::Summary FindingsDb::close_run(int64_t run,
                                          const std::function<std::optional<bool>(const FindingRow&)>& still_fails) {
  // Open findings last seen before the run began and not in it: those seen since (by this run, or by
  // another shard of the same night) are known to fail.
  const std::vector<FindingRow> unseen = sqlite_guarded(path_, "close_run", [&] {
    SQLite::Database db = connect();
    check_run(db, path_, run);
    return select_rows(db,
                       "status = 'open' AND last_seen <= (SELECT started FROM runs WHERE id = :run) AND NOT EXISTS "
                       "(SELECT 1 FROM sightings s WHERE s.run = :run AND s.signature = findings.signature) "
                       "ORDER BY signature",
                       run);
  });
  for (const FindingRow& row : unseen) {  // no connection is open while a replay runs (it may fork)
    std::optional<bool> fails;
    std::string note;
    try {
      fails = still_fails(row);
    } catch (const std::exception& e) {
      note = std::string("the replay threw: ") + e.what();
    }
    write_replay(run, row, fails, note);
  }
  return summary_of(run);
}

FindingsDb::Summary FindingsDb::summary_of(int64_t run) const {
  const auto replayed = [](const char* outcome) {
    return std::string("EXISTS (SELECT 1 FROM replays r WHERE r.run = :run AND r.signature = findings.signature AND "
                       "r.outcome = '") + outcome + "')";
  };
  const std::string seen =
      "EXISTS (SELECT 1 FROM sightings s WHERE s.run = :run AND s.signature = findings.signature)";
  return sqlite_guarded(path_, "summary", [&] {
    SQLite::Database db = connect();
    SQLite::Transaction snapshot(db);  // the four lists from one state of the file
    check_run(db, path_, run);
    Summary s;
    s.fresh = select_rows(db, "first_run = :run ORDER BY signature", run);
    s.still_failing =
        select_rows(db, "first_run != :run AND (" + seen + " OR " + replayed("fails") + ") ORDER BY signature", run);
    s.fixed = select_rows(db, replayed("passes") + " ORDER BY signature", run);
    s.not_replayed = select_rows(db, replayed("unknown") + " ORDER BY signature", run);
    snapshot.commit();
    return s;
  });
}

}  // namespace shardfuzz::fuzz::findings
