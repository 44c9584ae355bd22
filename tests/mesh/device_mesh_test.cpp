// DeviceMesh over a ThreadWorld: row-major coordinates, per-dim groups, flatten, submesh, and
// validation messages that name the offending field.
#include "runtime/mesh/device_mesh.h"
#include "runtime/comm/thread_world.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>
#include <gtest/gtest.h>

#include <numeric>

namespace shardfuzz::mesh {
namespace {

using comm::Communicator;
using comm::ReduceOp;

void run_all_ok(int n, const std::function<void(std::shared_ptr<Communicator>)>& fn) {
  comm::ThreadWorld world(comm::ThreadWorldOptions{n, std::chrono::milliseconds(10000)});
  for (const auto& o : world.run(fn)) EXPECT_TRUE(o.ok) << "rank " << o.rank << ": " << o.error;
}

std::vector<int> range(int begin, int end, int step = 1) {
  std::vector<int> v;
  for (int i = begin; i < end; i += step) v.push_back(i);
  return v;
}

TEST(DeviceMesh, DpModEpByEpOverEightRanks) {
  run_all_ok(8, [](std::shared_ptr<Communicator> world) {
    const int r = world->rank();
    DeviceMesh mesh(world, {2, 4}, {"dp_mod_ep", "ep"});
    EXPECT_EQ(mesh.ndim(), 2);
    EXPECT_EQ(mesh.size(), 8);
    EXPECT_EQ(mesh.describe(), "(dp_mod_ep=2, ep=4)");
    EXPECT_EQ(mesh.coordinate("dp_mod_ep"), r / 4);
    EXPECT_EQ(mesh.coordinate("ep"), r % 4);

    const auto& ep = mesh.dim("ep");
    EXPECT_EQ(ep.size, 4);
    EXPECT_EQ(ep.group->name(), "ep");
    EXPECT_EQ(ep.group->size(), 4);
    EXPECT_EQ(ep.group->rank(), r % 4);
    EXPECT_EQ(ep.group->global_ranks(), range(r / 4 * 4, r / 4 * 4 + 4));

    const auto& dp_mod_ep = mesh.dim("dp_mod_ep");
    EXPECT_EQ(dp_mod_ep.group->name(), "dp_mod_ep");
    EXPECT_EQ(dp_mod_ep.group->rank(), r / 4);
    EXPECT_EQ(dp_mod_ep.group->global_ranks(), (std::vector<int>{r % 4, r % 4 + 4}));

    EXPECT_THROW(mesh.dim("tp"), std::out_of_range);
    try {
      mesh.coordinate("tp");
    } catch (const std::out_of_range& e) {
      EXPECT_STREQ(e.what(), "mesh (dp_mod_ep=2, ep=4) has no dim 'tp'");
    }
  });
}

TEST(DeviceMesh, AllReduceAlongADimSumsItsLine) {
  run_all_ok(8, [](std::shared_ptr<Communicator> world) {
    const int r = world->rank();
    DeviceMesh mesh(world, {2, 4}, {"dp_mod_ep", "ep"});
    at::Tensor along_ep = at::full({5}, r, at::kLong);
    mesh.dim("ep").group->all_reduce(along_ep, ReduceOp::Sum);
    const int line = r / 4 * 4;
    EXPECT_TRUE(along_ep.equal(at::full({5}, 4 * line + 6, at::kLong)));  // line + (line+1) + ... + (line+3)

    at::Tensor along_dp = at::full({3}, r, at::kLong);
    mesh.dim("dp_mod_ep").group->all_reduce(along_dp, ReduceOp::Sum);
    EXPECT_TRUE(along_dp.equal(at::full({3}, 2 * (r % 4) + 4, at::kLong)));
  });
}

TEST(DeviceMesh, FlattenSpansTheNamedDimsInTheGivenOrder) {
  run_all_ok(8, [](std::shared_ptr<Communicator> world) {
    const int r = world->rank();
    DeviceMesh mesh(world, {2, 4}, {"dp_mod_ep", "ep"});
    DeviceMesh dp = mesh.flatten({"dp_mod_ep", "ep"}, "dp");
    EXPECT_EQ(dp.describe(), "(dp=8)");
    EXPECT_EQ(dp.coordinate("dp"), r);
    EXPECT_EQ(dp.dim("dp").group->global_ranks(), range(0, 8));
    EXPECT_EQ(dp.dim("dp").group->name(), "dp");
    at::Tensor t = at::full({2}, r, at::kLong);
    dp.dim("dp").group->all_reduce(t, ReduceOp::Sum);
    EXPECT_TRUE(t.equal(at::full({2}, 28, at::kLong)));

    // Reversed: ep is the slow index of the new dim.
    DeviceMesh reversed = mesh.flatten({"ep", "dp_mod_ep"}, "dp_t");
    EXPECT_EQ(reversed.dim("dp_t").group->global_ranks(), (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
    EXPECT_EQ(reversed.coordinate("dp_t"), (r % 4) * 2 + r / 4);

    EXPECT_THROW(mesh.flatten({"ep", "ep"}, "x"), std::invalid_argument);
    EXPECT_THROW(mesh.flatten({"nope"}, "x"), std::out_of_range);
  });
}

TEST(DeviceMesh, FlattenOfNonAdjacentDimsAndOfASubmesh) {
  run_all_ok(8, [](std::shared_ptr<Communicator> world) {
    const int r = world->rank();
    DeviceMesh mesh(world, {2, 2, 2}, {"a", "b", "c"});
    EXPECT_EQ(mesh.coordinate("a"), r / 4);
    EXPECT_EQ(mesh.coordinate("b"), r / 2 % 2);
    EXPECT_EQ(mesh.coordinate("c"), r % 2);
    const std::vector<int> ac = r / 2 % 2 ? std::vector<int>{2, 3, 6, 7} : std::vector<int>{0, 1, 4, 5};
    EXPECT_EQ(mesh.flatten({"a", "c"}, "ac").dim("ac").group->global_ranks(), ac);

    DeviceMesh sub = mesh.submesh({"c", "a"});
    EXPECT_EQ(sub.describe(), "(c=2, a=2)");
    EXPECT_EQ(sub.coordinate("c"), r % 2);
    EXPECT_EQ(sub.dim("a").group, mesh.dim("a").group);
    DeviceMesh sub_ac = sub.flatten({"a", "c"}, "ac");
    EXPECT_EQ(sub_ac.dim("ac").group->global_ranks(), ac);

    // Flattening a flattened dim with the rest of the mesh covers the world.
    DeviceMesh all = DeviceMesh(world, {2, 2, 2}, {"a", "b", "c"}).flatten({"b"}, "b2");
    EXPECT_EQ(all.dim("b2").group->size(), 2);
    EXPECT_THROW(mesh.submesh({"a", "a"}), std::invalid_argument);
  });
}

TEST(DeviceMesh, MeshOverASubgroupUsesItsRanks) {
  run_all_ok(8, [](std::shared_ptr<Communicator> world) {
    const int r = world->rank();
    // Ranks 4..7 build a 2 x 2 mesh of their own; its groups list global ranks.
    auto half = world->split(r / 4, r, "half");
    DeviceMesh mesh(half, {2, 2}, {"x", "y"});
    const int base = r / 4 * 4;
    EXPECT_EQ(mesh.dim("y").group->global_ranks(),
              (std::vector<int>{base + (r - base) / 2 * 2, base + (r - base) / 2 * 2 + 1}));
    EXPECT_EQ(mesh.flatten({"x", "y"}, "xy").dim("xy").group->global_ranks(), range(base, base + 4));
  });
}

TEST(DeviceMesh, WorldMeshIsOneDimOverEveryRank) {
  run_all_ok(3, [](std::shared_ptr<Communicator> world) {
    DeviceMesh mesh = DeviceMesh::world_mesh(world);
    EXPECT_EQ(mesh.describe(), "(dp=3)");
    EXPECT_EQ(mesh.dim("dp").group->global_ranks(), range(0, 3));
    EXPECT_EQ(mesh.coordinate("dp"), world->rank());
  });
}

TEST(DeviceMesh, RejectsShapesThatDoNotFitTheWorld) {
  const auto message = [](std::shared_ptr<Communicator> world, std::vector<int64_t> shape,
                          std::vector<std::string> names) -> std::string {
    try {
      DeviceMesh mesh(std::move(world), std::move(shape), std::move(names));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  run_all_ok(8, [&](std::shared_ptr<Communicator> world) {
    EXPECT_EQ(message(world, {2, 3}, {"dp", "ep"}), "mesh.shape: product 6 of (2, 3) does not equal world size 8");
    EXPECT_EQ(message(world, {4, 4}, {"dp", "ep"}), "mesh.shape: product of (4, 4) exceeds world size 8");
    EXPECT_EQ(message(world, {8}, {"dp", "ep"}), "mesh.names: 2 names for 1 dims in mesh.shape (8)");
    EXPECT_EQ(message(world, {8, 0}, {"dp", "ep"}), "mesh.shape[1]: size 0 must be >= 1");
    EXPECT_EQ(message(world, {2, 4}, {"dp", "dp"}), "mesh.names[1]: duplicate name 'dp'");
    EXPECT_EQ(message(world, {2, 4}, {"", "ep"}), "mesh.names[0]: empty name");
    EXPECT_EQ(message(world, {}, {}), "mesh.shape: empty, a mesh needs at least one dim");
    // Nothing above entered a collective: the world is still in step.
    world->barrier();
    EXPECT_EQ(world->sequence(), 1u);
  });
}

}  // namespace
}  // namespace shardfuzz::mesh
