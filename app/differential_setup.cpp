// Building a differential campaign's two sides.
#include "app/differential_setup.h"

#include "harness/backends/threads/threads_backend.h"
#include "harness/backends/torch/torch_backend.h"
#include "runtime/semantics/profile.h"

#include <stdexcept>

namespace shardfuzz::app {
namespace {

// The profile of `version`, or --profile's (a released torch profile) when given.
semantics::TorchModel model_for(const std::string& version, const std::string& profile) {
  semantics::TorchModel model = semantics::model_of_torch(version);
  if (profile.empty()) return model;
  const semantics::Profile p = semantics::Profile::named(profile);  // validates the name
  if (p.base == "strict")
    throw std::invalid_argument("--profile: strict models no torch release; a differential campaign compares a "
                                "torch with the profile that models it (torch-2.7, torch-2.9, torch-2.11)");
  model.profile = profile;
  return model;
}

std::string described(const semantics::TorchModel& m) {
  std::string s = "torch " + m.version + ", modelled by " + m.profile;
  if (m.newer_than_every_profile) s += " (newer than every profile: divergences read \"behaviour changed since " + m.profile + "\")";
  if (m.older_than_every_profile) s += " (older than every profile)";
  if (m.prerelease) s += " (a pre-release or fork build)";
  return s;
}

}  // namespace

void set_up_differential(const BackendFlags& backend, const DifferentialFlags& flags, fuzz::CampaignOptions& c,
                         std::ostream& out) {
  if (backend.backend != "threads" && backend.backend != "process")
    throw std::invalid_argument("--backend: with --differential it names the native side (threads or process); the "
                                "torch side is always torch (--torch-python)");
  if (!flags.torch_as.empty() && flags.torch_as != "torch-2.9")
    throw std::invalid_argument("--torch-as: '" + flags.torch_as + "': the export can patch torch to behave as "
                                "torch-2.9 only (post_forward with PR #164009 undone)");
  if (backend.no_recovery) throw std::invalid_argument("--no-recovery: a differential campaign plans no faults");
  BackendFlags torch_flags = backend;
  torch_flags.backend = "torch";
  torch_flags.device = "cpu";
  torch_flags.nproc = 0;
  auto torch = std::shared_ptr<harness::Backend>(make_backend(torch_flags));
  auto* torch_backend = dynamic_cast<harness::torch_backend::TorchBackend*>(torch.get());
  if (!torch_backend) throw std::logic_error("--differential: the torch backend is not a TorchBackend");
  const semantics::TorchModel model = model_for(torch_backend->installed_torch_version(), flags.profile);
  if (!flags.torch_as.empty() && semantics::Profile::named(model.profile).post_forward_reshards_during_backward)
    throw std::invalid_argument("--torch-as: torch " + model.version + " already runs post_forward inside backward (" +
                                model.profile + "); there is nothing to patch");
  c.native = backend.backend == "threads" && backend.device == "cpu" ? harness::make_threads_backend()
                                                                      : std::shared_ptr<harness::Backend>(make_backend(backend));
  c.backend = torch;
  c.torch_and_native = std::make_shared<harness::differential::Differential>(
      *torch, *c.native, harness::differential::DifferentialOptions{model, flags.torch_as, {}});
  c.differential = true;
  c.torch_as = flags.torch_as;
  c.gen.profile = model.profile;
  c.gen.faults = false;
  c.isolation.reset();
  out << "fuzz: differential: " << described(model)
      << (flags.torch_as.empty() ? "" : "; torch patched to run as " + flags.torch_as) << "; native side: "
      << c.native->name() << "\n";
}

}  // namespace shardfuzz::app
