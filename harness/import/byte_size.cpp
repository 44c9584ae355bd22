// Reading "80GiB" and the like (byte_size.h).
#include "harness/import/byte_size.h"

#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

// Bytes per unit; -1 for an unknown unit.
double unit_scale(const std::string& unit) {
  if (unit.empty() || unit == "B") return 1.0;
  if (unit == "KiB") return 1024.0;
  if (unit == "MiB") return 1048576.0;
  if (unit == "GiB") return 1073741824.0;
  if (unit == "KB") return 1e3;
  if (unit == "MB") return 1e6;
  if (unit == "GB") return 1e9;
  return -1.0;
}

}  // namespace

int64_t parse_byte_size(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const double scale = unit_scale(text.substr(used));
  if (used == 0 || scale < 0 || !(value > 0) || value * scale > 1e18)  // NaN too
    throw std::invalid_argument(what + ": \"" + text + "\" is not a size (80GiB, 80GB, 512MiB, or bytes)");
  return static_cast<int64_t>(value * scale);
}

}  // namespace shardfuzz::harness::import
