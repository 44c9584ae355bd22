// The findings database's file: its tables, how a file is told to be one (PRAGMA application_id
// and schema_version), and SQLite's errors turned into messages that name the file.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz::findings {

inline constexpr int kBusyTimeoutMs = 30000;

// A writable connection: WAL journal and synchronous=NORMAL set, and the schema created in an
// empty file (in one IMMEDIATE transaction, so writers opening a new file together create it once).
// Throws std::runtime_error naming `path` when the file is another SQLite database or of a newer
// schema_version.
void prepare_writable(SQLite::Database& db, const std::string& path);
// A read-only connection: the same checks, nothing written.
void check_findings_file(SQLite::Database& db, const std::string& path);

// "findings database PATH: WHAT: <what went wrong>", in words for the errors people meet (not a
// database, busy past the timeout, cannot open, corrupt).
std::string describe_sqlite_error(const std::string& path, const std::string& what, const SQLite::Exception& e);

// Runs `f`, turning a SQLite::Exception into a std::runtime_error from describe_sqlite_error.
template <class F>
auto sqlite_guarded(const std::string& path, const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const SQLite::Exception& e) {
    throw std::runtime_error(describe_sqlite_error(path, what, e));
  }
}

}  // namespace shardfuzz::fuzz::findings
