// Reading and writing rows of the findings table, with its columns spelled in one place.
#pragma once

#include "fuzz/findings/records.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <string>

namespace shardfuzz::fuzz::findings {

// The findings table's columns in FindingRow's order, for "SELECT <kFindingColumns> FROM findings".
extern const char* const kFindingColumns;

// The row at a statement that selected kFindingColumns.
FindingRow read_finding(const SQLite::Statement& q);

// Inserts `row` whole (the caller checked the signature is new).
void insert_finding(SQLite::Database& db, const FindingRow& row);

// FindingStatus from its column; throws std::runtime_error naming `signature` for another value.
FindingStatus status_from_name(const std::string& name, const std::string& signature);

}  // namespace shardfuzz::fuzz::findings
