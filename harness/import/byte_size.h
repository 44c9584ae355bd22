// A size as people write a device's memory: "80GiB", "80GB", "512MiB", "1.5KiB", or plain bytes.
#pragma once

#include <cstdint>
#include <string>

namespace shardfuzz::harness::import {

// Throws std::invalid_argument `what: "TEXT" is not a size (80GiB, 80GB, 512MiB, or bytes)` for
// anything else, a size of zero or less, or one over 10^18 bytes. `what` names where the text came
// from (the flag: "--device-memory").
int64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace shardfuzz::harness::import
