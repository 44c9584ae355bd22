// The three profiles. Adding a profile means adding a name here and, per difference, a switch.
#include "runtime/fsdp/profile.h"

#include <stdexcept>

namespace shardfuzz::fsdp {

Profile Profile::named(const std::string& name) {
  Profile p;
  p.name = name;
  if (name == "torch-2.9") {
    p.post_forward_reshards_during_backward = true;
  } else if (name == "torch-2.11") {
    p.world1_persistent_all_gather_buffer = true;
  } else if (name == "strict") {
    p.world1_persistent_all_gather_buffer = true;
    p.prefetch_skips_groups_without_pending_backward = true;
    p.free_unconsumed_all_gather_at_post_backward = true;
  } else {
    throw std::invalid_argument("profile: unknown name '" + name + "' (expected torch-2.9, torch-2.11 or strict)");
  }
  return p;
}

std::vector<std::string> Profile::names() { return {"torch-2.9", "torch-2.11", "strict"}; }

}  // namespace shardfuzz::fsdp
