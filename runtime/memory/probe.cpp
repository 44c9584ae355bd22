// Reads a rank's bytes from the allocator its tensors live in.
#include "runtime/memory/probe.h"

#include "runtime/memory/device_memory.h"

#include <stdexcept>

namespace shardfuzz::memory {

Probe Probe::cpu() {
  install_counting_allocator();
  return Probe(kCpu);
}

Probe Probe::meta() {
  install_counting_allocator();  // what a shape-only run still keeps on the host counts alike
  install_counting_meta_allocator();
  return Probe(kMeta);
}

Probe Probe::cuda(int device, bool warm) {
  if (!cuda_probe_built())
    throw std::invalid_argument("device cuda:" + std::to_string(device) +
                                ": this build has no CUDA LibTorch (configure it with the torch wheel's, docs/gpu-path.md)");
  if (!cuda_device_available())
    throw std::invalid_argument("device cuda:" + std::to_string(device) + ": no CUDA device is visible");
  if (device >= cuda_device_count())
    throw std::invalid_argument("device cuda:" + std::to_string(device) + ": this host has " +
                                std::to_string(cuda_device_count()) + " CUDA device(s)");
  if (warm) warm_up_device(device);
  return Probe(device);
}

Probe Probe::named(const std::string& name, const std::string& field, bool warm) {
  if (name == "cpu") return cpu();
  if (name == "meta") return meta();
  try {
    if (name == "cuda") return cuda(0, warm);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(field + ": " + e.what());
  }
  if (name.rfind("cuda:", 0) == 0) {
    const std::string index = name.substr(5);
    if (!index.empty() && index.size() < 4 && index.find_first_not_of("0123456789") == std::string::npos) {
      try {
        return cuda(std::stoi(index), warm);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(field + ": " + e.what());
      }
    }
  }
  throw std::invalid_argument(field + ": '" + name + "' is not a device (cpu, meta, cuda or cuda:N)");
}

c10::Device Probe::device() const {
  if (shape_only()) return c10::Device(c10::DeviceType::Meta);
  return on_device() ? c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_))
                     : c10::Device(c10::DeviceType::CPU);
}

std::string Probe::name() const {
  if (shape_only()) return "meta";
  return on_device() ? "cuda:" + std::to_string(device_) : "cpu";
}

RankBytes Probe::bytes(int rank) const {
  if (!on_device()) return allocated_bytes(rank);
  const DeviceBytes d = device_bytes(device_);
  return {d.allocated, d.peak_allocated};
}

int64_t Probe::reserved_bytes() const { return on_device() ? device_bytes(device_).reserved : 0; }

void Probe::warm_up() const {
  if (on_device()) warm_up_device(device_);
}

void Probe::synchronize() const {
  if (on_device()) synchronize_device(device_);
}

nlohmann::json Probe::snapshot() const { return on_device() ? device_snapshot(device_) : nlohmann::json(); }

void Probe::reset_peak(int rank) const {
  if (on_device())
    reset_device_peaks(device_);
  else
    memory::reset_peak(rank);
}

}  // namespace shardfuzz::memory
