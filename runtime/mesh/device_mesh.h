// DeviceMesh: named dims over the world's ranks (row-major), each dim served by a sub-group, e.g.
// world 8 = dp_mod_ep 2 x ep 4, with flatten() giving the dense params' 8-rank "dp" group.
#pragma once

#include "runtime/comm/communicator.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardfuzz::mesh {

class DeviceMesh {
 public:
  struct Dim {
    std::string name;
    int64_t size;
    std::shared_ptr<comm::Communicator> group;  // this rank's group along the dim
  };

  // Collective over `world`: every rank must construct the same mesh in the same order.
  // Throws std::invalid_argument naming the field when shape/names do not fit the world.
  DeviceMesh(std::shared_ptr<comm::Communicator> world, std::vector<int64_t> shape,
             std::vector<std::string> names);
  // A 1-D mesh over the whole world.
  static DeviceMesh world_mesh(std::shared_ptr<comm::Communicator> world, const std::string& name = "dp");

  int ndim() const { return static_cast<int>(dims_.size()); }
  const std::vector<Dim>& dims() const { return dims_; }
  const Dim& dim(const std::string& name) const;       // throws std::out_of_range naming it
  int64_t size() const;                                 // product of dim sizes
  int coordinate(const std::string& name) const;        // this rank's index along a dim
  const std::shared_ptr<comm::Communicator>& world() const { return world_; }

  // The sub-mesh of the named dims (kept in the given order); shares the dims' groups.
  DeviceMesh submesh(const std::vector<std::string>& names) const;
  // Collective: one new dim spanning the named dims (which must be adjacent in this mesh is NOT
  // required), ranks grouped by their coordinates in the remaining dims.
  DeviceMesh flatten(const std::vector<std::string>& names, const std::string& new_name) const;

  std::string describe() const;  // e.g. "(dp_mod_ep=2, ep=4)"

 private:
  DeviceMesh(std::shared_ptr<comm::Communicator> world, std::vector<Dim> dims, std::vector<int> coords)
      : world_(std::move(world)), dims_(std::move(dims)), coords_(std::move(coords)) {}
  std::shared_ptr<comm::Communicator> world_;
  std::vector<Dim> dims_;
  std::vector<int> coords_;  // this rank's coordinate per dim
};

}  // namespace shardfuzz::mesh
