// `fuzz --differential`: the two sides of a differential campaign from the command line. The torch
// side is the torch backend (--torch-python, --cpu, --torch-deadline); the native side is --backend
// (threads, or process for CUDA rank processes); the profile is the one that models the installed
// torch (runtime/semantics/torch_version.h), unless --profile names one.
#pragma once

#include "app/backend_flags.h"
#include "fuzz/campaign/campaign.h"

#include <ostream>
#include <string>

namespace shardfuzz::app {

struct DifferentialFlags {
  bool on = false;
  std::string torch_as;  // --torch-as: run torch patched to behave as this profile
  std::string profile;   // --profile: the model, instead of the installed version's
};

// Fills `c` (backend: torch; native; differential; generator profile; no isolation: the native side
// runs in this process, torch in its own rank processes). Asks the worker for the installed torch's
// version and says what models it on `out`. Throws std::invalid_argument naming the flag, and
// std::runtime_error when torch cannot be reached.
void set_up_differential(const BackendFlags& backend, const DifferentialFlags& flags, fuzz::CampaignOptions& c,
                         std::ostream& out);

}  // namespace shardfuzz::app
