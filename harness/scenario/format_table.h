// The tables of docs/scenario-format.md ("Fields": the scenario, a block, a fully_shard entry),
// made from the records' field lists: key, type, default and what is allowed. A test keeps the
// document equal to them; `shardfuzz gen --format-table` prints them.
#pragma once

#include <string>

namespace shardfuzz::harness {

// Markdown: the scenario's table, then a block's, then a fully_shard entry's, each headed by a line.
std::string scenario_format_tables();

}  // namespace shardfuzz::harness
