// Merging one findings database into another: the events (runs, sightings, replays) are united,
// then every finding they touch is recomputed from them, so merging the same file twice adds nothing.
#include "fuzz/findings/findings_db.h"

#include "fuzz/findings/rows.h"
#include "fuzz/findings/schema.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <map>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::fuzz::findings {
namespace {

struct RunRow {
  int64_t id = 0;
  std::string uid, label, started, torch_version, profile;
  std::optional<std::string> finished;
};

struct Event {  // a sighting (seq, at) or a replay (at, outcome, note)
  int64_t run = 0, seq = 0;
  std::string signature, at, outcome, note;
};

struct Contents {
  std::vector<RunRow> runs;
  std::vector<Event> sightings, replays;
  std::vector<FindingRow> findings;
};

// The whole file, read in one transaction (one snapshot, while its writers go on).
Contents read_contents(SQLite::Database& db) {
  SQLite::Transaction snapshot(db);
  Contents c;
  SQLite::Statement runs(db, "SELECT id, uid, label, started, finished, torch_version, profile FROM runs");
  while (runs.executeStep()) {
    RunRow r{runs.getColumn(0).getInt64(), runs.getColumn(1).getString(), runs.getColumn(2).getString(),
             runs.getColumn(3).getString(), runs.getColumn(5).getString(), runs.getColumn(6).getString(), {}};
    if (!runs.getColumn(4).isNull()) r.finished = runs.getColumn(4).getString();
    c.runs.push_back(r);
  }
  SQLite::Statement seen(db, "SELECT run, seq, signature, at FROM sightings");
  while (seen.executeStep())
    c.sightings.push_back({seen.getColumn(0).getInt64(), seen.getColumn(1).getInt64(), seen.getColumn(2).getString(),
                           seen.getColumn(3).getString(), "", ""});
  SQLite::Statement replays(db, "SELECT run, signature, at, outcome, note FROM replays");
  while (replays.executeStep())
    c.replays.push_back({replays.getColumn(0).getInt64(), 0, replays.getColumn(1).getString(),
                         replays.getColumn(2).getString(), replays.getColumn(3).getString(),
                         replays.getColumn(4).getString()});
  SQLite::Statement findings(db, std::string("SELECT ") + kFindingColumns + " FROM findings");
  while (findings.executeStep()) c.findings.push_back(read_finding(findings));
  snapshot.commit();
  return c;
}

// Throws naming the file when an event or finding names a run its runs table lacks.
void check_runs_named(const Contents& c, const std::string& path) {
  std::map<int64_t, bool> known;
  for (const RunRow& r : c.runs) known[r.id] = true;
  const auto check = [&](int64_t run, const std::string& sig) {
    if (!known.count(run))
      throw std::runtime_error("findings database " + path + ": finding " + sig + " names run " + std::to_string(run) +
                               ", which its runs table lacks");
  };
  for (const Event& e : c.sightings) check(e.run, e.signature);
  for (const Event& e : c.replays) check(e.run, e.signature);
  for (const FindingRow& f : c.findings) {
    check(f.first_run, f.signature);
    check(f.last_run, f.signature);
  }
}

// The other file's run ids -> this file's, taking in the runs this file does not know (by uid).
std::map<int64_t, int64_t> merge_runs(SQLite::Database& db, const std::vector<RunRow>& runs) {
  std::map<int64_t, int64_t> ids;
  for (const RunRow& r : runs) {
    SQLite::Statement known(db, "SELECT id FROM runs WHERE uid = ?");
    known.bind(1, r.uid);
    if (known.executeStep()) {
      ids[r.id] = known.getColumn(0).getInt64();
      if (r.finished) {
        SQLite::Statement fin(db, "UPDATE runs SET finished = ? WHERE id = ? AND finished IS NULL");
        fin.bind(1, *r.finished);
        fin.bind(2, ids[r.id]);
        fin.exec();
      }
      continue;
    }
    SQLite::Statement add(db,
                          "INSERT INTO runs (uid, label, started, finished, torch_version, profile) "
                          "VALUES (?, ?, ?, ?, ?, ?)");
    add.bind(1, r.uid);
    add.bind(2, r.label);
    add.bind(3, r.started);
    if (r.finished) add.bind(4, *r.finished); else add.bind(4);
    add.bind(5, r.torch_version);
    add.bind(6, r.profile);
    add.exec();
    ids[r.id] = db.getLastInsertRowid();
  }
  return ids;
}

void merge_events(SQLite::Database& db, const Contents& c, const std::map<int64_t, int64_t>& ids) {
  SQLite::Statement s(db, "INSERT OR IGNORE INTO sightings (run, signature, seq, at) VALUES (?, ?, ?, ?)");
  for (const Event& e : c.sightings) {
    s.bind(1, ids.at(e.run));
    s.bind(2, e.signature);
    s.bind(3, e.seq);
    s.bind(4, e.at);
    s.exec();
    s.reset();
  }
  SQLite::Statement r(db, "INSERT OR IGNORE INTO replays (run, signature, at, outcome, note) VALUES (?, ?, ?, ?, ?)");
  for (const Event& e : c.replays) {
    r.bind(1, ids.at(e.run));
    r.bind(2, e.signature);
    r.bind(3, e.at);
    r.bind(4, e.outcome);
    r.bind(5, e.note);
    r.exec();
    r.reset();
  }
}

// A finding of the other file: inserted when new here; otherwise the smaller reproducer and the
// torch and profile of the later sighting are kept. Counts, times and status follow from the events.
void merge_finding(SQLite::Database& db, FindingRow row, const std::map<int64_t, int64_t>& ids) {
  row.first_run = ids.at(row.first_run);
  row.last_run = ids.at(row.last_run);
  if (row.fixed_run) row.fixed_run = ids.count(*row.fixed_run) ? std::optional(ids.at(*row.fixed_run)) : std::nullopt;
  SQLite::Statement known(db, "SELECT reproducer_size, last_seen FROM findings WHERE signature = ?");
  known.bind(1, row.signature);
  if (!known.executeStep()) return insert_finding(db, row);
  const bool smaller = row.reproducer_size < known.getColumn(0).getInt64();
  const bool later = row.last_seen > known.getColumn(1).getString();
  known.reset();
  if (smaller) {
    SQLite::Statement u(db, "UPDATE findings SET reproducer = ?, reproducer_size = ?, reproducer_path = ? WHERE signature = ?");
    u.bind(1, row.reproducer);
    u.bind(2, row.reproducer_size);
    u.bind(3, row.reproducer_path);
    u.bind(4, row.signature);
    u.exec();
  }
  if (later) {
    SQLite::Statement u(db, "UPDATE findings SET torch_version = ?, profile = ? WHERE signature = ?");
    u.bind(1, row.torch_version);
    u.bind(2, row.profile);
    u.bind(3, row.signature);
    u.exec();
  }
}

// count, first/last seen and run from the sightings; fixed when a passing replay is newer than the
// last sighting (else open: seen again after its fix, a regression).
void recompute(SQLite::Database& db, const std::string& sig) {
  SQLite::Statement u(db, R"sql(
    UPDATE findings SET
      count = (SELECT count(*) FROM sightings WHERE signature = :sig),
      first_seen = (SELECT min(at) FROM sightings WHERE signature = :sig),
      last_seen = (SELECT max(at) FROM sightings WHERE signature = :sig),
      first_run = (SELECT run FROM sightings WHERE signature = :sig ORDER BY at, run LIMIT 1),
      last_run = (SELECT run FROM sightings WHERE signature = :sig ORDER BY at DESC, run DESC LIMIT 1),
      fixed_run = (SELECT r.run FROM replays r WHERE r.signature = :sig AND r.outcome = 'passes'
                   AND r.at > (SELECT max(at) FROM sightings WHERE signature = :sig) ORDER BY r.at DESC LIMIT 1)
    WHERE signature = :sig AND EXISTS (SELECT 1 FROM sightings WHERE signature = :sig))sql");
  u.bind(":sig", sig);
  u.exec();
  SQLite::Statement s(db,
                      "UPDATE findings SET status = CASE WHEN fixed_run IS NULL THEN 'open' ELSE 'fixed' END "
                      "WHERE signature = ? AND EXISTS (SELECT 1 FROM sightings WHERE signature = ?)");
  s.bind(1, sig);
  s.bind(2, sig);
  s.exec();
}

}  // namespace

void FindingsDb::merge_from(const std::string& other_path) {
  const FindingsDb other(other_path, Access::ReadOnly);
  const Contents c = sqlite_guarded(other_path, "merge_from (reading it)", [&] {
    SQLite::Database db = other.connect();
    return read_contents(db);
  });
  check_runs_named(c, other_path);
  sqlite_guarded(path_, "merge_from " + other_path, [&] {
    SQLite::Database db = connect();
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    const std::map<int64_t, int64_t> ids = merge_runs(db, c.runs);
    merge_events(db, c, ids);
    for (const FindingRow& row : c.findings) merge_finding(db, row, ids);
    for (const FindingRow& row : c.findings) recompute(db, row.signature);
    tx.commit();
  });
}

}  // namespace shardfuzz::fuzz::findings
