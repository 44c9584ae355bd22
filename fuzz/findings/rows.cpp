// The findings table's rows.
#include "fuzz/findings/rows.h"

#include <stdexcept>

namespace shardfuzz::fuzz::findings {

const char* const kFindingColumns =
    "signature, property, zoo, shape, first_seen, last_seen, first_run, last_run, count, torch_version, profile, "
    "reproducer, reproducer_size, reproducer_path, status, fixed_run";

FindingStatus status_from_name(const std::string& name, const std::string& signature) {
  if (name == "open") return FindingStatus::Open;
  if (name == "fixed") return FindingStatus::Fixed;
  throw std::runtime_error("finding " + signature + ": status \"" + name + "\" is neither open nor fixed");
}

FindingRow read_finding(const SQLite::Statement& q) {
  FindingRow r;
  r.signature = q.getColumn(0).getString();
  r.property = q.getColumn(1).getString();
  r.zoo = q.getColumn(2).getString();
  r.shape = q.getColumn(3).getString();
  r.first_seen = q.getColumn(4).getString();
  r.last_seen = q.getColumn(5).getString();
  r.first_run = q.getColumn(6).getInt64();
  r.last_run = q.getColumn(7).getInt64();
  r.count = q.getColumn(8).getInt64();
  r.torch_version = q.getColumn(9).getString();
  r.profile = q.getColumn(10).getString();
  r.reproducer = q.getColumn(11).getString();
  r.reproducer_size = q.getColumn(12).getInt64();
  r.reproducer_path = q.getColumn(13).getString();
  r.status = status_from_name(q.getColumn(14).getString(), r.signature);
  if (!q.getColumn(15).isNull()) r.fixed_run = q.getColumn(15).getInt64();
  return r;
}

void insert_finding(SQLite::Database& db, const FindingRow& r) {
  SQLite::Statement q(db, std::string("INSERT INTO findings (") + kFindingColumns +
                              ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int i = 0;
  for (const std::string* s : {&r.signature, &r.property, &r.zoo, &r.shape, &r.first_seen, &r.last_seen}) q.bind(++i, *s);
  for (int64_t v : {r.first_run, r.last_run, r.count}) q.bind(++i, v);
  for (const std::string* s : {&r.torch_version, &r.profile, &r.reproducer}) q.bind(++i, *s);
  q.bind(++i, r.reproducer_size);
  q.bind(++i, r.reproducer_path);
  q.bind(++i, std::string(status_name(r.status)));
  if (r.fixed_run) q.bind(++i, *r.fixed_run); else q.bind(++i);
  q.exec();
}

}  // namespace shardfuzz::fuzz::findings
