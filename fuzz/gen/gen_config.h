// What the scenario generator may vary and what the caller pins (`shardfuzz fuzz --world N
// --profile P`). Plain data: the same config and seed always draw the same scenario.
#pragma once

#include <string>
#include <vector>

namespace shardfuzz::fuzz {

struct GenConfig {
  int world = 0;        // 0: drawn from 1-max_world (shrinks toward 1); N > 0: every scenario has world N
  int max_world = 8;    // the largest world drawn (a torch side with few GPUs and CPU cores)
  std::string profile;  // "": drawn (torch-2.11, torch-2.9, strict); else every scenario has it
  int max_blocks = 4;   // the block list holds 1..max_blocks blocks (at size >= 50; fewer below)
  int max_steps = 3;    // steps are drawn from 1..max_steps
  bool faults = false;  // draw a fault plan (1-2 faults) for every scenario
  std::vector<std::string> fault_kinds;  // the kinds drawn (empty: gen::default_fault_kinds())
  // Without `faults`: the share of cases (0-100) that a campaign gives one recoverable fault (an oom
  // at a drawn allocation, or an exception in a drawn module's forward or backward, on a drawn
  // rank; fuzz/campaign/source.cpp), so that every campaign exercises
  // recovery and the oracles that judge the state it leaves. It is added to the draw, not drawn by
  // the generator, so fault-free draws stay what they were.
  int recoverable_fault_percent = 5;
  // The share of multi-rank cases (0-100) that run their rank threads under a seeded schedule
  // (comm/schedule.h: preemptions drawn from the case's seed) instead of the canonical one, so
  // campaigns search interleavings at collective boundaries too. Added to the draw like the above.
  int seeded_schedule_percent = 50;
};

}  // namespace shardfuzz::fuzz
