// A seeded, recordable schedule for the rank threads of a ThreadWorld (deterministic simulation,
// in the style of FoundationDB's simulator and of systematic concurrency testers such as CHESS and
// PCT): exactly one rank thread runs at a time, and it hands over only at a collective boundary —
// entering a collective, blocking in one (its rendezvous, its finish, the recovery rendezvous),
// pausing (a straggler or hang fault) or leaving its rank function. Which rank runs next is a
// *decision*, made only where more than one rank could run; the candidates are ordered from the
// rank that handed over (it first, when it can go on), then the ranks after it, cyclically, so
// candidate 0 is always "no preemption".
//
// Deadlines and pauses run on the world's own clock, which advances only when no rank can run: to
// the earliest deadline or the end of the earliest pause. So a hang costs no wall-clock time, and a
// deadline fires in the same order on every run.
//
// A run is then a function of its inputs and this schedule: a timing-dependent failure replays
// exactly from the schedule it ran under, and the schedule is one more input to search and shrink.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardfuzz::comm {

struct Schedule {
  // Decision i takes candidate `switches[j].second` (modulo the candidates there) when
  // `switches[j].first == i`; otherwise, with seed 0, candidate 0 (the canonical schedule: a rank
  // runs until it blocks, then the next rank after it that can run); with another seed, a draw
  // from (seed, i), so overriding one decision leaves every other draw as it was.
  uint64_t seed = 0;
  std::vector<std::pair<uint64_t, uint64_t>> switches;  // (decision, candidate), by decision

  bool canonical() const { return seed == 0 && switches.empty(); }
  // The candidate decision `decision` takes among `candidates` (> 1) ranks.
  uint64_t choose(uint64_t decision, uint64_t candidates) const;
};

// What a scheduled run did: replaying `switches` with seed 0 reproduces it decision for decision.
struct ScheduleRecord {
  bool scheduled = false;   // false: the OS ran the threads freely (nothing below is meaningful)
  uint64_t decisions = 0;   // points where more than one rank could run
  std::vector<std::pair<uint64_t, uint64_t>> switches;  // every decision that took a candidate other than 0
  int64_t clock_ms = 0;     // the world's clock when the last rank left
  // A hash of every decision: its candidates (ranks, in order), the one taken, and the clock. Two
  // runs with the same fingerprint interleaved their ranks identically.
  uint64_t fingerprint = 0;

  // "412 decisions, 3 switches, clock 3500 ms, fingerprint 9f3a..." for progress lines and notes.
  std::string summary() const;
};

// "a1b2c3d4e5f60718": a fingerprint as the run JSON and reproducers spell it.
std::string fingerprint_hex(uint64_t fingerprint);

}  // namespace shardfuzz::comm
