// torch <= 2.7 clamps the root's reshard_after_forward whatever was passed, an integer included
// (lazy init set the root group's post_forward_mesh_info to None; pytorch PR #155319 made it honour
// an explicit value): under torch-2.7 a root given reshard_after_forward=2 keeps its parameters
// unsharded after forward, and its FORWARD reshard is recorded as keeping them; torch-2.11 reshards.
#include "harness/backends/threads/threads_backend.h"
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shardfuzz::harness {
namespace {

Scenario root_with_int(const std::string& profile) {
  return parse_scenario(R"({"schema": 1, "world_size": 4, "steps": 1, "profile": ")" + profile + R"(",
    "embed": true, "blocks": [{"kind": "mlp"}],
    "fully_shard": {"": {"reshard_after_forward": 2}, "layers.0": {"reshard_after_forward": 2}}})");
}

// Rank 0's root at the end of the first forward: unsharded, and its FORWARD reshard's detail.
std::pair<bool, bool> root_after_forward(const std::string& profile) {
  RunOptions options;
  options.reference = false;
  const RunRecord run = run_threads(root_with_int(profile), options);
  EXPECT_TRUE(run.ok()) << run.error;
  bool unsharded = false, kept = false;
  for (const auto& e : run.ranks.at(0).timeline) {
    if (e.event == memory::Event::Reshard && e.group == "root" && e.detail.value("state", "") == "FORWARD")
      kept = e.detail.value("kept", false);
    if (e.event == memory::Event::ForwardEnd) {
      unsharded = std::count(e.unsharded.begin(), e.unsharded.end(), "root") > 0;
      break;
    }
  }
  return {unsharded, kept};
}

TEST(RootClamp, Torch27KeepsAnIntegerRootUnshardedAfterForward) {
  EXPECT_EQ(root_after_forward("torch-2.7"), std::make_pair(true, true));
}

TEST(RootClamp, Torch211HonoursAnIntegerOnTheRoot) {
  EXPECT_EQ(root_after_forward("torch-2.11"), std::make_pair(false, false));
}

}  // namespace
}  // namespace shardfuzz::harness
