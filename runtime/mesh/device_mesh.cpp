// DeviceMesh: row-major coordinates over the world's ranks and one comm-split group per dim.
#include "runtime/mesh/device_mesh.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::mesh {
namespace {

std::string join_sizes(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ")";
  return os.str();
}

void validate(const comm::Communicator& world, const std::vector<int64_t>& shape,
              const std::vector<std::string>& names) {
  if (shape.empty()) throw std::invalid_argument("mesh.shape: empty, a mesh needs at least one dim");
  if (shape.size() != names.size())
    throw std::invalid_argument("mesh.names: " + std::to_string(names.size()) + " names for " +
                                std::to_string(shape.size()) + " dims in mesh.shape " + join_sizes(shape));
  std::set<std::string> seen;
  int64_t product = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::string at = "[" + std::to_string(d) + "]";
    if (shape[d] < 1)
      throw std::invalid_argument("mesh.shape" + at + ": size " + std::to_string(shape[d]) + " must be >= 1");
    if (names[d].empty()) throw std::invalid_argument("mesh.names" + at + ": empty name");
    if (!seen.insert(names[d]).second)
      throw std::invalid_argument("mesh.names" + at + ": duplicate name '" + names[d] + "'");
    // Checked before multiplying so absurd shapes cannot overflow.
    if (shape[d] > world.size() || product * shape[d] > world.size())
      throw std::invalid_argument("mesh.shape: product of " + join_sizes(shape) + " exceeds world size " +
                                  std::to_string(world.size()));
    product *= shape[d];
  }
  if (product != world.size())
    throw std::invalid_argument("mesh.shape: product " + std::to_string(product) + " of " + join_sizes(shape) +
                                " does not equal world size " + std::to_string(world.size()));
}

}  // namespace

DeviceMesh::DeviceMesh(std::shared_ptr<comm::Communicator> world, std::vector<int64_t> shape,
                       std::vector<std::string> names)
    : world_(std::move(world)) {
  if (!world_) throw std::invalid_argument("mesh.world: null communicator");
  validate(*world_, shape, names);
  const int ndim = static_cast<int>(shape.size());
  const int rank = world_->rank();
  std::vector<int64_t> stride(ndim, 1);
  for (int d = ndim - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
  for (int d = 0; d < ndim; ++d) coords_.push_back(static_cast<int>(rank / stride[d] % shape[d]));
  for (int d = 0; d < ndim; ++d) {
    // The line along dim d is the set of ranks that agree on every other coordinate.
    int64_t color = 0;
    for (int e = 0; e < ndim; ++e)
      if (e != d) color = color * shape[e] + coords_[e];
    auto group = world_->split(static_cast<int>(color), coords_[d], names[d]);
    dims_.push_back({names[d], shape[d], std::move(group)});
  }
}

DeviceMesh DeviceMesh::world_mesh(std::shared_ptr<comm::Communicator> world, const std::string& name) {
  if (!world) throw std::invalid_argument("mesh.world: null communicator");
  const int64_t size = world->size();
  return DeviceMesh(std::move(world), {size}, {name});
}

const DeviceMesh::Dim& DeviceMesh::dim(const std::string& name) const {
  for (const auto& d : dims_)
    if (d.name == name) return d;
  throw std::out_of_range("mesh " + describe() + " has no dim '" + name + "'");
}

int64_t DeviceMesh::size() const {
  int64_t product = 1;
  for (const auto& d : dims_) product *= d.size;
  return product;
}

int DeviceMesh::coordinate(const std::string& name) const {
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].name == name) return coords_[i];
  throw std::out_of_range("mesh " + describe() + " has no dim '" + name + "'");
}

DeviceMesh DeviceMesh::submesh(const std::vector<std::string>& names) const {
  if (names.empty()) throw std::invalid_argument("submesh names: empty, name at least one dim of " + describe());
  std::vector<Dim> dims;
  std::vector<int> coords;
  std::set<std::string> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) throw std::invalid_argument("submesh names: duplicate dim '" + name + "'");
    dims.push_back(dim(name));
    coords.push_back(coordinate(name));
  }
  return DeviceMesh(world_, std::move(dims), std::move(coords));
}

DeviceMesh DeviceMesh::flatten(const std::vector<std::string>& names, const std::string& new_name) const {
  if (names.empty()) throw std::invalid_argument("flatten names: empty, name at least one dim of " + describe());
  if (new_name.empty()) throw std::invalid_argument("flatten new_name: empty name");
  // A submesh has forgotten the dims it dropped, so the new group cannot be derived from
  // coordinates alone. Groups along a mesh's dims are independent lines of a row-major grid, so
  // the flattened group is every sum of one offset per named dim; its lowest rank names it.
  std::set<std::string> seen;
  std::vector<int> members{world_->global_rank()};  // dims' groups list global ranks
  int key = 0;
  int64_t size = 1;
  for (const auto& name : names) {
    if (!seen.insert(name).second) throw std::invalid_argument("flatten names: duplicate dim '" + name + "'");
    const Dim& d = dim(name);
    const auto& line = d.group->global_ranks();
    const int here = line[d.group->rank()];
    std::vector<int> next;
    for (int m : members)
      for (int g : line) next.push_back(m + g - here);
    members = std::move(next);
    key = key * static_cast<int>(d.size) + coordinate(name);
    size *= d.size;
  }
  std::sort(members.begin(), members.end());
  if (std::adjacent_find(members.begin(), members.end()) != members.end())
    throw std::invalid_argument("flatten names: dims of " + describe() + " overlap (one was flattened from another)");
  auto group = world_->split(members.front(), key, new_name);
  return DeviceMesh(world_, {Dim{new_name, size, std::move(group)}}, {key});
}

std::string DeviceMesh::describe() const {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i].name << "=" << dims_[i].size;
  os << ")";
  return os.str();
}

}  // namespace shardfuzz::mesh
