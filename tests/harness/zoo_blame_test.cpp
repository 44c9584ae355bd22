// Blame hunting one row (harness::zoo::blame with only_row, what `fuzz --until-row` asks at every
// shrink step) names that row exactly when the full blame does, on every reproducer the project
// keeps and for every row of the zoo table, and flips fewer switches to say so.
#include "harness/files/json_files.h"
#include "harness/reproducer.h"
#include "harness/zoo/blame.h"
#include "harness/zoo/zoo_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace shardfuzz::harness::zoo {
namespace {

bool names(const std::vector<Blame>& blames, const std::string& row) {
  return std::any_of(blames.begin(), blames.end(), [&](const Blame& b) { return b.row == row; });
}

TEST(ZooBlame, HuntingOneRowNamesItExactlyWhenTheFullBlameDoes) {
  std::set<std::string> rows;
  for (const ZooRow& r : zoo_table()) rows.insert(r.row);
  int blamed = 0;
  for (const std::string& path : json_files_in(SHARDFUZZ_SOURCE_DIR "/reproducers", "reproducers")) {
    const Scenario sc = load_reproducer(path).scenario;
    const std::vector<Blame> full = blame(sc);
    blamed += !full.empty();
    for (const std::string& row : rows) {
      const std::vector<Blame> hunted = blame(sc, nullptr, row);
      EXPECT_EQ(names(hunted, row), names(full, row)) << path << ", row " << row;
      for (const Blame& b : hunted) EXPECT_EQ(b.row, row) << path << ": hunting row " << row << " named " << b.row;
    }
  }
  EXPECT_GE(blamed, 4) << "the reproducers blame rows 1, 5, 10, 13 and 14 between them";
}

}  // namespace
}  // namespace shardfuzz::harness::zoo
