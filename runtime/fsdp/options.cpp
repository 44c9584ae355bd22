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

}  // namespace shardfuzz::fsdp
