// The unsharded reference of a scenario, run once per scenario: the same model from the same seed,
// every rank's batches, the same optimizer on full tensors (runtime/train/reference.h). The native
// backends attach it to their RunRecord as part of the run, so parity_with_reference judges the
// record alone; a small cache keyed by what the reference depends on (not the profile, the fault
// plan or the name) serves blame's flipped profiles and repeated runs without training it again.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace shardfuzz::harness {

struct Reference {
  std::vector<std::vector<double>> losses;       // [step][rank]
  std::map<std::string, at::Tensor> parameters;  // fqn -> the full parameter after the last step
};

// The scenario's reference, from the cache or trained now (on the CPU). Thread-safe.
std::shared_ptr<const Reference> reference_of(const Scenario& scenario);

// The scenario's reference computed in a wider type: a low-precision scenario's in float32 (stored
// and computed), a float32 scenario's in float64 (computed and reduced; stored in float32 as the
// scenario stores it). How far it lies from reference_of is how far rounding alone moves this
// scenario's training: parity's slack where a comparison fails. Cached like reference_of.
std::shared_ptr<const Reference> rounding_twin_of(const Scenario& scenario);

// Whether the scenario's reference trains the ranks' batches of each forward as one batch
// (train::run_reference's ranks_as_one_batch: world-size times fewer ops): when every output row of
// the model depends on its own input row alone (no block attends), no discrete choice hangs on a
// row's last bit (no top-k routing: a near-tie that a matmul over more rows rounds the other way
// would route a token elsewhere) and everything is float32, where the other summation order stays
// far inside parity's tolerance.
bool reference_batches_ranks(const Scenario& scenario);

// Attaches the reference to a run that parity can judge: completed, with the ranks' shard values,
// and no planned non-finite gradient fired (it changes training; nonfinite_reported judges it).
void attach_reference(const Scenario& scenario, RunRecord& run);

// Trains the scenario's reference on a thread of its own while the run goes on (every fuzz case is a
// new scenario, so its reference is trained in every case: serially after the run it was a third of
// a world-4 case on 2 cores, and the ranks' rendezvous leave the cores room for it). attach_reference
// then finds it in the cache. Nothing starts when `wanted` is false, the run is shape-only or a
// planned non-finite gradient may change training (attach_reference would not attach it). A failure
// is left to attach_reference, which trains again and throws. The destructor waits for the thread.
class ReferenceInBackground {
 public:
  ReferenceInBackground(const Scenario& scenario, bool wanted, bool shape_only);
  ~ReferenceInBackground();
  ReferenceInBackground(const ReferenceInBackground&) = delete;
  ReferenceInBackground& operator=(const ReferenceInBackground&) = delete;
  void wait();

 private:
  std::thread thread_;
};

// How many references were trained (not served from the cache) in this process.
int references_trained();

}  // namespace shardfuzz::harness
