// The findings database (fuzz/findings/findings_db.h): schema, counting and the smallest
// reproducer, two nights with a new, a still-failing and a fixed finding, regressions, merging, many
// writer processes killed mid-write (half forked while the parent holds the database), bad files;
// and the structural shape behind the signature (fuzz/findings/signature.h).
#include "fuzz/findings/findings_db.h"
#include "fuzz/findings/signature.h"
#include "harness/files/temp_dir.h"
#include "harness/scenario/standard_scenarios.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace shardfuzz::fuzz::findings {
namespace {

// A clock that ticks one second per call from `day` (2026-12-DD) and `ms`, so times order as calls do.
struct TestClock {
  int day = 1;
  int tick = 0;
  int ms = 0;
  std::string operator()() {
    char text[40];
    std::snprintf(text, sizeof text, "2026-12-%02dT%02d:%02d:%02d.%03dZ", day, tick / 3600, tick / 60 % 60, tick % 60, ms);
    ++tick;
    return text;
  }
};

void use_clock(FindingsDb& db, std::shared_ptr<TestClock> clock) {
  db.set_clock([clock] { return (*clock)(); });
}

FindingInput finding(const std::string& property, const std::string& zoo, int64_t size, const std::string& path = "") {
  FindingInput f;
  f.property = property;
  f.zoo = zoo;
  f.shape = "shape of " + property;
  f.torch_version = "2.11.0";
  f.profile = "torch-2.11";
  f.reproducer_json = "{\"size\": " + std::to_string(size) + "}";
  f.reproducer_path = path.empty() ? "findings/" + property + "-" + std::to_string(size) + ".json" : path;
  f.reproducer_size = size;
  return f;
}

std::set<std::string> properties_of(const std::vector<FindingRow>& rows) {
  std::set<std::string> out;
  for (const auto& r : rows) out.insert(r.property);
  return out;
}

int64_t sightings_of(const std::string& path, const std::string& signature) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  SQLite::Statement q(db, "SELECT count(*) FROM sightings WHERE signature = ?");
  q.bind(1, signature);
  q.executeStep();
  return q.getColumn(0).getInt64();
}

TEST(FindingsDb, CreatesItsSchemaAndReopensIt) {
  harness::TempDir dir("shardfuzz-findings");
  const std::string path = dir.path() + "/findings.db";
  std::string sig;
  {
    FindingsDb db(path);
    sig = db.record(db.begin_run("night 1", "2.11.0", "torch-2.11"), finding("liveness", "5", 10));
  }
  EXPECT_FALSE(std::ifstream(path + "-wal").good()) << "the WAL was not folded into the file at the end";
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT version FROM schema_version").getInt(), kFindingsSchemaVersion);
    EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
    EXPECT_EQ(raw.execAndGet("PRAGMA application_id").getInt(), kFindingsApplicationId);
    for (const char* table : {"runs", "findings", "sightings", "replays"}) EXPECT_TRUE(raw.tableExists(table)) << table;
  }
  FindingsDb again(path);
  const auto rows = again.list();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].signature, sig);
  EXPECT_EQ(sig.rfind("liveness|5|", 0), 0u) << sig;
  EXPECT_EQ(FindingsDb(path, FindingsDb::Access::ReadOnly).list().size(), 1u);
}

TEST(FindingsDb, RecordingAgainCountsAndKeepsTheSmallestReproducer) {
  harness::TempDir dir("shardfuzz-findings");
  FindingsDb db(dir.path() + "/findings.db");
  auto clock = std::make_shared<TestClock>();
  use_clock(db, clock);
  const int64_t run = db.begin_run("night", "2.11.0", "torch-2.11");
  const std::string sig = db.record(run, finding("liveness", "5", 100));
  EXPECT_EQ(db.record(run, finding("liveness", "5", 50)), sig);
  EXPECT_EQ(db.record(run, finding("liveness", "5", 80)), sig);
  const auto row = db.find(sig);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->count, 3);
  EXPECT_EQ(row->first_seen, "2026-12-01T00:00:01.000Z");
  EXPECT_EQ(row->last_seen, "2026-12-01T00:00:03.000Z");
  EXPECT_EQ(row->first_run, run);
  EXPECT_EQ(row->last_run, run);
  EXPECT_EQ(row->reproducer_size, 50);
  EXPECT_EQ(row->reproducer_path, "findings/liveness-50.json");
  EXPECT_EQ(row->reproducer, "{\"size\": 50}");
  EXPECT_EQ(row->status, FindingStatus::Open);
  EXPECT_EQ(sightings_of(db.path(), sig), 3);
  // Another zoo row or another shape is another finding.
  FindingInput other_shape = finding("liveness", "5", 100);
  other_shape.shape = "another shape";
  EXPECT_NE(db.record(run, other_shape), sig);
  EXPECT_NE(db.record(run, finding("liveness", "S3", 100)), sig);
  EXPECT_EQ(db.list().size(), 3u);
  EXPECT_THROW(db.record(run + 7, finding("liveness", "5", 1)), std::invalid_argument);
  EXPECT_THROW(db.record(run, finding("", "5", 1)), std::invalid_argument);
}

// Night 1 finds A and B; night 2 finds B and C, and A's reproducer passes: C is new, B still fails,
// A is fixed. Night 3 finds A again (a regression); B's replay cannot tell, C's replay throws.
TEST(FindingsDb, TwoNightsThenARegression) {
  harness::TempDir dir("shardfuzz-findings");
  FindingsDb db(dir.path() + "/findings.db");
  auto clock = std::make_shared<TestClock>();
  use_clock(db, clock);
  const int64_t night1 = db.begin_run("night 1", "2.11.0", "torch-2.11");
  db.record(night1, finding("A", "1", 10));
  db.record(night1, finding("B", "2", 10));
  auto s1 = db.close_run(night1, [](const FindingRow& r) -> std::optional<bool> {
    ADD_FAILURE() << r.property << " was replayed in the night that saw it";
    return true;
  });
  db.finish_run(night1);
  EXPECT_EQ(properties_of(s1.fresh), (std::set<std::string>{"A", "B"}));

  clock->day = 2;
  const int64_t night2 = db.begin_run("night 2", "2.11.0", "torch-2.11");
  db.record(night2, finding("B", "2", 10));
  db.record(night2, finding("C", "3", 10));
  std::vector<std::string> replayed;
  const auto s2 = db.close_run(night2, [&](const FindingRow& r) -> std::optional<bool> {
    replayed.push_back(r.property);
    return r.property != "A";
  });
  EXPECT_EQ(replayed, std::vector<std::string>{"A"});
  EXPECT_EQ(properties_of(s2.fresh), std::set<std::string>{"C"});
  EXPECT_EQ(properties_of(s2.still_failing), std::set<std::string>{"B"});
  EXPECT_EQ(properties_of(s2.fixed), std::set<std::string>{"A"});
  EXPECT_TRUE(s2.not_replayed.empty());
  const auto again = db.summary_of(night2);
  EXPECT_EQ(properties_of(again.fresh), std::set<std::string>{"C"});
  EXPECT_EQ(properties_of(again.still_failing), std::set<std::string>{"B"});
  EXPECT_EQ(properties_of(again.fixed), std::set<std::string>{"A"});
  const auto a = s2.fixed.at(0);
  EXPECT_EQ(a.status, FindingStatus::Fixed);
  EXPECT_EQ(a.fixed_run, night2);

  clock->day = 3;
  const int64_t night3 = db.begin_run("night 3", "2.11.0", "torch-2.11");
  const std::string sig_a = db.record(night3, finding("A", "1", 10));
  const auto s3 = db.close_run(night3, [](const FindingRow& r) -> std::optional<bool> {
    if (r.property == "C") throw std::runtime_error("no torch here");
    return std::nullopt;
  });
  const auto regressed = db.find(sig_a);
  ASSERT_TRUE(regressed);
  EXPECT_EQ(regressed->status, FindingStatus::Open);
  EXPECT_FALSE(regressed->fixed_run);
  EXPECT_EQ(regressed->count, 2);
  EXPECT_EQ(properties_of(s3.still_failing), std::set<std::string>{"A"});
  EXPECT_EQ(properties_of(s3.not_replayed), (std::set<std::string>{"B", "C"}));
  EXPECT_TRUE(s3.fresh.empty());
  EXPECT_TRUE(s3.fixed.empty());
  // Night 2's summary still reads as it was.
  EXPECT_EQ(properties_of(db.summary_of(night2).fixed), std::set<std::string>{"A"});
}

TEST(FindingsDb, MergeUnitesTwoFilesAndMergingTwiceChangesNothing) {
  harness::TempDir dir("shardfuzz-findings");
  const std::string here = dir.path() + "/here.db", there = dir.path() + "/there.db";
  auto clock = std::make_shared<TestClock>();
  std::string shared, only_here, only_there, fixed_here;
  {
    FindingsDb db(here);
    use_clock(db, clock);
    const int64_t run = db.begin_run("machine 1", "2.11.0", "torch-2.11");
    shared = db.record(run, finding("S", "1", 30, "here/S.json"));
    db.record(run, finding("S", "1", 40, "here/S.json"));
    only_here = db.record(run, finding("H", "1", 10));
    fixed_here = db.record(run, finding("F", "1", 10));
    clock->day = 2;
    const int64_t next = db.begin_run("machine 1, night 2", "2.11.0", "torch-2.11");
    db.close_run(next, [](const FindingRow& r) { return std::optional<bool>(r.property != "F"); });
  }
  {
    *clock = TestClock{1, 0, 500};  // the other machine ran half a second behind, and saw F again later
    FindingsDb db(there);
    use_clock(db, clock);
    const int64_t run = db.begin_run("machine 2", "2.9.0", "torch-2.9");
    FindingInput s = finding("S", "1", 20, "there/S.json");
    s.torch_version = "2.9.0";
    db.record(run, s);
    only_there = db.record(run, finding("T", "1", 10));
    clock->day = 3;
    db.record(run, finding("F", "1", 10));
  }
  FindingsDb db(here);
  db.merge_from(there);
  const auto check = [&] {
    EXPECT_EQ(db.list().size(), 4u);
    const auto s = db.find(shared);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->count, 3);
    EXPECT_EQ(s->reproducer_size, 20);
    EXPECT_EQ(s->reproducer_path, "there/S.json");
    EXPECT_EQ(s->first_seen, "2026-12-01T00:00:01.000Z");  // machine 1's first sighting
    EXPECT_EQ(s->last_seen, "2026-12-01T00:00:02.000Z");   // machine 1's second (machine 2's: 01.500)
    EXPECT_EQ(s->torch_version, "2.11.0");
    EXPECT_TRUE(db.find(only_here));
    EXPECT_TRUE(db.find(only_there));
    const auto f = db.find(fixed_here);  // fixed on night 2 here, seen on day 3 there: open again
    ASSERT_TRUE(f);
    EXPECT_EQ(f->status, FindingStatus::Open);
    EXPECT_EQ(f->count, 2);
    EXPECT_EQ(f->last_seen.substr(0, 10), "2026-12-03");
    for (const auto& row : db.list()) EXPECT_EQ(sightings_of(here, row.signature), row.count) << row.signature;
  };
  check();
  db.merge_from(there);
  check();
  db.merge_from(here);
  check();
  EXPECT_THROW(db.merge_from(dir.path() + "/missing.db"), std::runtime_error);
}

// A writer: records `n` findings, alternately its own and shared with the other writers, each in its
// own transaction, and appends each signature to its log (fsync'd) after record() returned.
int write_findings(const std::string& db_path, const std::string& log_path, int writer, int n) {
  try {
    FindingsDb db(db_path);
    const int64_t run = db.begin_run("writer " + std::to_string(writer), "", "strict");
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log < 0) return 3;
    for (int k = 0; k < n; ++k) {
      const bool shared = k % 2 == 1;
      FindingInput f = finding(shared ? "shared" : "own", shared ? std::to_string(k % 10) : "w" + std::to_string(writer),
                               1000 - k);
      f.shape = "shape " + std::to_string(shared ? k % 10 : k);
      const std::string line = db.record(run, f) + "\n";
      if (::write(log, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fsync(log) != 0) return 4;
    }
    db.finish_run(run);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer %d: %s\n", writer, e.what());
    return 1;
  }
}

std::vector<std::string> log_lines(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  return lines;  // a line cut by the kill (no newline) is not counted
}

TEST(FindingsDbConcurrency, EightWriterProcessesFourKilledLoseNoCommittedRow) {
  harness::TempDir dir("shardfuzz-findings");
  const std::string path = dir.path() + "/findings.db";  // created by the first writers, racing
  constexpr int kWriters = 8, kRecords = 200;
  std::vector<pid_t> pids;
  std::unique_ptr<FindingsDb> parent;
  for (int w = 0; w < kWriters; ++w) {
    // The second half is forked while this process holds a FindingsDb, as a --jobs campaign does.
    if (w == kWriters / 2) parent = std::make_unique<FindingsDb>(path);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(write_findings(path, dir.path() + "/log-" + std::to_string(w), w, kRecords));
    pids.push_back(pid);
  }
  const std::string parents = parent->record(parent->begin_run("parent", "", "strict"), finding("parent", "1", 5));
  // Kill writers 0, 2, 4, 6 each once its log holds a random number of records: mid-loop, most
  // likely inside a transaction (that is where a writer spends its time).
  std::mt19937 rng(std::random_device{}());
  std::map<int, int> killed_after;
  for (int w = 0; w < kWriters; w += 2) killed_after[w] = std::uniform_int_distribution<int>(1, kRecords - 20)(rng);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!killed_after.empty() && std::chrono::steady_clock::now() < give_up) {
    for (auto it = killed_after.begin(); it != killed_after.end();) {
      if (static_cast<int>(log_lines(dir.path() + "/log-" + std::to_string(it->first)).size()) >= it->second) {
        ::kill(pids[it->first], SIGKILL);
        it = killed_after.erase(it);
      } else {
        ++it;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(killed_after.empty()) << "writers too slow to reach their kill points";
  parent.reset();  // done while the writers left alone still write
  for (int w = 0; w < kWriters; ++w) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[w], &status, 0), pids[w]);
    if (w % 2 == 0)
      EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    else
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << w << " status " << status;
  }

  std::map<std::string, int64_t> committed;
  for (int w = 0; w < kWriters; ++w)
    for (const auto& sig : log_lines(dir.path() + "/log-" + std::to_string(w))) ++committed[sig];
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
  }
  FindingsDb db(path);
  int64_t total = 0;
  for (const auto& [sig, n] : committed) {
    const auto row = db.find(sig);
    ASSERT_TRUE(row) << sig << " was committed and is gone";
    EXPECT_GE(row->count, n) << sig;
    total += n;
  }
  EXPECT_GE(total, 4 * kRecords);  // the four writers left alone finished
  EXPECT_TRUE(db.find(parents));
  for (const auto& row : db.list()) EXPECT_EQ(sightings_of(path, row.signature), row.count) << row.signature;
}

// SQLite does not wait out a busy database for the switch to WAL (its busy handler is not called
// there): processes that open one new file at the same moment, as the shards of a nightly job or a
// campaign's workers do, failed at once with "database is locked". Eight openers released together,
// over many fresh files; before the fix, five runs of this test lost an opener on 1 to 16 of the 40.
TEST(FindingsDbConcurrency, EightProcessesCreatingOneFileTogetherAllOpenIt) {
  constexpr int kFiles = 40, kOpeners = 8;
  int failed_files = 0;
  std::string first_failure;
  for (int f = 0; f < kFiles; ++f) {
    harness::TempDir dir("shardfuzz-findings");
    const std::string path = dir.path() + "/findings.db";
    int go[2], report[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(report), 0);
    std::vector<pid_t> pids;
    for (int w = 0; w < kOpeners; ++w) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(go[1]);
        char byte;
        (void)!::read(go[0], &byte, 1);  // returns when the parent closes its end: all start together
        try {
          FindingsDb db(path);
          db.begin_run("opener " + std::to_string(w), "", "strict");
          ::_exit(0);
        } catch (const std::exception& e) {
          const std::string line = std::string(e.what()).substr(0, 400) + "\n";
          (void)!::write(report[1], line.data(), line.size());
          ::_exit(1);
        }
      }
      pids.push_back(pid);
    }
    ::close(go[0]);
    ::close(report[1]);
    ::close(go[1]);
    int failures = 0;
    for (const pid_t pid : pids) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
    char text[512];
    const ssize_t n = ::read(report[0], text, sizeof text - 1);
    ::close(report[0]);
    if (failures > 0) {
      ++failed_files;
      if (first_failure.empty() && n > 0) first_failure.assign(text, static_cast<size_t>(n));
      continue;
    }
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM runs").getInt(), kOpeners) << path;
  }
  EXPECT_EQ(failed_files, 0) << "of " << kFiles << " files; the first failure: " << first_failure;
}

TEST(FindingsDb, AFileThatIsNotAFindingsDatabaseIsAnErrorNamingIt) {
  harness::TempDir dir("shardfuzz-findings");
  const auto message_of = [](const std::string& path, FindingsDb::Access access) -> std::string {
    try {
      FindingsDb db(path, access);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string text = dir.path() + "/notes.txt";
  std::ofstream(text) << "this is not a database, only some text that goes on for a while\n";
  for (auto access : {FindingsDb::Access::ReadWrite, FindingsDb::Access::ReadOnly}) {
    const std::string m = message_of(text, access);
    EXPECT_NE(m.find(text), std::string::npos) << m;
    EXPECT_NE(m.find("not a SQLite database"), std::string::npos) << m;
  }
  const std::string other = dir.path() + "/other.db";
  {
    SQLite::Database raw(other, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE photos(id INTEGER)");
  }
  std::string m = message_of(other, FindingsDb::Access::ReadWrite);
  EXPECT_NE(m.find(other + ": not a shardfuzz findings database"), std::string::npos) << m;
  EXPECT_NE(m.find("photos"), std::string::npos) << m;

  const std::string newer = dir.path() + "/newer.db";
  { FindingsDb db(newer); }
  {
    SQLite::Database raw(newer, SQLite::OPEN_READWRITE);
    raw.exec("UPDATE schema_version SET version = 2");
  }
  m = message_of(newer, FindingsDb::Access::ReadWrite);
  EXPECT_NE(m.find(newer + ": schema_version 2 is newer"), std::string::npos) << m;

  const std::string missing = dir.path() + "/missing.db";
  m = message_of(missing, FindingsDb::Access::ReadOnly);
  EXPECT_NE(m.find(missing + ": no such file"), std::string::npos) << m;
  m = message_of(dir.path() + "/no/such/folder/f.db", FindingsDb::Access::ReadWrite);
  EXPECT_NE(m.find("no/such/folder/f.db"), std::string::npos) << m;
}

TEST(FindingSignature, TheStructuralShapeIgnoresSeedDimsAndName) {
  harness::Scenario a = harness::standard_small_scenario("torch-2.11");
  harness::Scenario b = a;
  b.seed = a.seed + 12345;
  b.name = "another name";
  b.dims.dim *= 2;
  b.dims.hidden += 8;
  b.dims.tokens += 3;
  b.optimizer.lr *= 10;
  const std::string shape = structural_shape(a);
  EXPECT_EQ(structural_shape(b), shape);
  EXPECT_NE(shape.find("block 0: "), std::string::npos) << shape;
  EXPECT_NE(shape.find("fully_shard \"\": "), std::string::npos) << shape;
  EXPECT_EQ(shape.find(a.name.empty() ? "\x01" : a.name), std::string::npos) << shape;

  harness::Scenario c = a;
  c.blocks[0].ac = c.blocks[0].ac == ac::CheckpointMode::None ? ac::CheckpointMode::NonReentrant : ac::CheckpointMode::None;
  EXPECT_NE(structural_shape(c), shape);
  harness::Scenario d = a;
  d.world_size = a.world_size * 2;
  EXPECT_NE(structural_shape(d), shape);
  harness::Scenario e = a;
  e.fully_shard.begin()->second.backward_prefetch = std::vector<std::string>{};
  EXPECT_NE(structural_shape(e), shape);

  const std::string sig = finding_signature("liveness", "5", shape);
  EXPECT_EQ(sig, "liveness|5|" + fnv1a64_hex(shape));
  EXPECT_EQ(fnv1a64_hex(""), "cbf29ce484222325");  // FNV-1a 64's offset basis
  EXPECT_EQ(finding_signature("liveness", "", shape), "liveness|unattributed|" + fnv1a64_hex(shape));
  EXPECT_THROW(finding_signature("a|b", "5", shape), std::invalid_argument);
}

}  // namespace
}  // namespace shardfuzz::fuzz::findings
