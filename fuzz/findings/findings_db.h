// The findings database: every finding of every night in one SQLite file, keyed by its stable
// signature (signature.h), with its first and last sighting, how often it was seen, the smallest
// reproducer so far, and whether it is open or fixed. Two tables are its event log — `sightings`
// (one row per record()) and `replays` (one row per finding close_run() replayed) — and `findings` is
// kept equal to what they say, so counts are auditable and merges can be recomputed from events.
//
// Safe for many writer processes on one file (a campaign's shards, a nightly job and a developer):
// WAL journal, every write one BEGIN IMMEDIATE transaction, 30 s busy timeout; a writer killed
// mid-transaction loses that transaction only. The object holds a path, not a connection: each
// operation opens its own and closes it, so a process may hold a FindingsDb across fork() (a SQLite
// connection must not cross it: a child opening the file beside an inherited connection shares the
// parent's lock bookkeeping, and committed rows were lost when the parent closed). The destructor
// folds the WAL into the file when no other process has it open. Times are ISO-8601 UTC with
// milliseconds ("2026-12-03T08:34:10.123Z"), so they sort as text.
#pragma once

#include "fuzz/findings/records.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace SQLite {
class Database;
}

namespace shardfuzz::fuzz::findings {

class FindingsDb {
 public:
  enum class Access { ReadWrite, ReadOnly };

  // ReadWrite creates the file (not its folder) and the schema when missing. ReadOnly never creates
  // anything. Throws std::runtime_error naming `path` when the file is missing (ReadOnly), not a
  // SQLite database, not a findings database, or of a newer schema_version.
  explicit FindingsDb(const std::string& path, Access access = Access::ReadWrite);
  ~FindingsDb();
  FindingsDb(const FindingsDb&) = delete;
  FindingsDb& operator=(const FindingsDb&) = delete;

  const std::string& path() const { return path_; }

  // A new run (a night's campaign, or one shard of it); returns its id.
  int64_t begin_run(const std::string& label, const std::string& torch_version, const std::string& profile);
  void finish_run(int64_t run);

  // One sighting of a finding in `run`, in one transaction: a new signature is inserted (open, count
  // 1); a known one gets last_seen, last_run, count + 1, status open again (a fixed finding seen
  // again is a regression), and its reproducer replaced only by a smaller one. Returns the
  // signature. Throws std::invalid_argument naming the field for an unknown run or a bad name.
  std::string record(int64_t run, const FindingInput& f);

  // How a run's findings came out.
  struct Summary {
    std::vector<FindingRow> fresh;          // first seen in this run
    std::vector<FindingRow> still_failing;  // seen again in this run, or not seen but its replay still fails
    std::vector<FindingRow> fixed;          // not seen, and its reproducer's replay passed: now fixed
    std::vector<FindingRow> not_replayed;   // not seen, and the replay could not tell (nullopt or it threw)
  };
  // Call after the run's record()s: every open finding not seen since `run` began is replayed through
  // `still_fails` (outside any transaction: a replay may take minutes); false marks it fixed in
  // `run`. Each outcome is written to `replays`, so summary_of(run) reads the same back. A callback
  // that throws counts as "cannot tell".
  Summary close_run(int64_t run, const std::function<std::optional<bool>(const FindingRow&)>& still_fails);
  Summary summary_of(int64_t run) const;

  std::vector<FindingRow> list() const;  // every finding, the most recently seen first
  std::optional<FindingRow> find(const std::string& signature) const;

  // Unites another findings database into this one in one transaction: runs by their unique id,
  // sightings and replays as events, then every touched finding recomputed from its events
  // (first_seen the earliest, last_seen the latest, count the sightings, fixed only when a passing
  // replay is newer than the last sighting) with the smaller reproducer kept. Merging the same file
  // twice changes nothing the second time. Throws std::runtime_error naming `other_path` when it is
  // missing or not a findings database.
  void merge_from(const std::string& other_path);

  // The clock record/close_run/begin_run stamp with (default: the system clock, UTC); for tests.
  void set_clock(std::function<std::string()> now);

 private:
  std::string path_;
  Access access_;
  std::function<std::string()> now_;

  // A connection for one operation (busy timeout, synchronous=NORMAL), closed when it returns;
  // without `checkpoint_on_close` its close leaves the WAL for the next one (the destructor folds it).
  SQLite::Database connect(bool checkpoint_on_close = false) const;
  // Writes one replay's outcome (and the fix it makes) in one transaction.
  void write_replay(int64_t run, const FindingRow& row, std::optional<bool> still_fails, const std::string& note);
};

// Now, as an ISO-8601 UTC time with milliseconds.
std::string iso_utc_now();

}  // namespace shardfuzz::fuzz::findings
