// Printing of options for messages and reports.
#include "runtime/fsdp/options.h"

namespace shardfuzz::fsdp {

std::string ReshardAfterForward::describe() const {
  switch (kind) {
    case Kind::Auto: return "auto";
    case Kind::True: return "true";
    case Kind::False: return "false";
    case Kind::Int: return std::to_string(n);
  }
  return "?";
}

std::string MixedPrecisionPolicy::describe() const {
  auto name = [](const std::optional<c10::ScalarType>& t) { return t ? std::string(c10::toString(*t)) : "None"; };
  return "MixedPrecisionPolicy(param_dtype=" + name(param_dtype) + ", reduce_dtype=" + name(reduce_dtype) + ")";
}

}  // namespace shardfuzz::fsdp
