// The fault plan, typed: a planned fault is a rank plus one of three kinds of fault — at a
// collective, in a module, in the allocator — each with its own enum and fields, so a fault that
// names a module and a collective, or an oom with a pass, cannot be written. Part of the scenario
// like everything else (generated, shrunk, stored in reproducers). A fault whose collective
// (module call, allocation) the run never reaches does not fire.
#pragma once

#include "harness/scenario/enum_names.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace shardfuzz::harness {

// At the collective boundary of the rank, before its `collective`-th collective (0-based, counted
// over all the rank's groups):
//   Straggler       — the rank arrives delay_ms late;
//   CollectiveError — the collective fails on that rank;
//   Hang            — the rank never enters it (it stays away past its peers' deadline);
//   Crash           — the rank dies (its thread, on the threads backend);
//   Abort           — the rank aborts its process (SIGABRT; on the threads backend that is every
//                     rank: only isolation survives it, as a process_survives finding).
struct CollectiveFault {
  enum class Kind { Straggler, CollectiveError, Hang, Crash, Abort };
  Kind kind = Kind::CollectiveError;
  int collective = 0;
  int delay_ms = 0;  // Straggler only (the reader takes it for no other kind)
};

// Inside the model, at step `step` (0-based): module `module` ("" = the root)
//   Exception — throws in its forward or backward (`pass`);
//   Nan, Inf  — the gradient flowing into its output in backward gets one non-finite element (the
//               run goes on; nonfinite_reported checks the runtime says where it first appeared).
struct ModuleFault {
  enum class Kind { Exception, Nan, Inf };
  enum class Pass { Forward, Backward };
  Kind kind = Kind::Exception;
  std::string module;
  int step = 0;
  Pass pass = Pass::Forward;  // Exception only (the reader takes it for no other kind)
};

// In the allocator ("oom"): the rank's allocation number `allocation` (0-based, counted from the
// start of training) fails, or the first allocation that takes the rank above `limit_bytes` of
// training memory does: c10::OutOfMemoryError from the allocator, as a real OOM.
struct OomAtAllocation {
  int index = 0;
};
struct OomAboveBytes {
  int64_t limit = 1;
};
struct AllocationFault {
  using AtAllocation = OomAtAllocation;
  using AboveBytes = OomAboveBytes;
  std::variant<AtAllocation, AboveBytes> trigger;
};

struct FaultSpec {
  int rank = 0;
  std::variant<CollectiveFault, ModuleFault, AllocationFault> fault;

  // The kind's name, as the JSON and the RunRecord spell it: "straggler", ..., "nan", "oom".
  std::string kind_name() const;
  const CollectiveFault* at_collective() const { return std::get_if<CollectiveFault>(&fault); }
  const ModuleFault* in_module() const { return std::get_if<ModuleFault>(&fault); }
  const AllocationFault* in_allocator() const { return std::get_if<AllocationFault>(&fault); }
  bool is(CollectiveFault::Kind k) const { return at_collective() && at_collective()->kind == k; }
  bool is(ModuleFault::Kind k) const { return in_module() && in_module()->kind == k; }
  bool is_nonfinite() const { return is(ModuleFault::Kind::Nan) || is(ModuleFault::Kind::Inf); }
  // Whether the ranks can recover from it and run the step again (train/recovery.h).
  bool is_recoverable() const { return in_allocator() || is(ModuleFault::Kind::Exception); }
  // Whether the run must stop with an error every rank sees: all kinds but a straggler under the
  // collective deadline, a non-finite gradient (training goes on with it) and, when the ranks
  // recover (RunRecord::recovery), an oom or exception (every rank sees it, then retries the step).
  bool must_be_detected(int deadline_ms, bool recovery) const;

  static FaultSpec collective_fault(int rank, CollectiveFault::Kind kind, int collective, int delay_ms = 0);
  static FaultSpec module_fault(int rank, ModuleFault::Kind kind, std::string module, int step,
                                ModuleFault::Pass pass = ModuleFault::Pass::Forward);
  static FaultSpec oom_at_allocation(int rank, int allocation);
  static FaultSpec oom_above_bytes(int rank, int64_t limit_bytes);
};

// Every kind name a FaultSpec may have, in the docs' order.
const std::vector<std::string>& fault_kinds();

template <>
struct EnumNames<CollectiveFault::Kind> {
  using K = CollectiveFault::Kind;
  static constexpr const char* what = "a fault kind";
  static constexpr std::array<std::pair<K, const char*>, 5> table{{{K::Straggler, "straggler"},
                                                                   {K::CollectiveError, "collective_error"},
                                                                   {K::Hang, "hang"},
                                                                   {K::Crash, "crash"},
                                                                   {K::Abort, "abort"}}};
};
template <>
struct EnumNames<ModuleFault::Kind> {
  using K = ModuleFault::Kind;
  static constexpr const char* what = "a fault kind";
  static constexpr std::array<std::pair<K, const char*>, 3> table{{{K::Exception, "exception"}, {K::Nan, "nan"}, {K::Inf, "inf"}}};
};
template <>
struct EnumNames<ModuleFault::Pass> {
  using P = ModuleFault::Pass;
  static constexpr const char* what = "a pass";
  static constexpr std::array<std::pair<P, const char*>, 2> table{{{P::Forward, "forward"}, {P::Backward, "backward"}}};
};
inline constexpr const char* kOomFaultName = "oom";

}  // namespace shardfuzz::harness
