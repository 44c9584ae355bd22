// Edge coverage of the runtime, for coverage-guided campaigns (libFuzzer's and AFL's feedback,
// over whole multi-rank runs). A build configured with -DSHARDFUZZ_COVERAGE=ON compiles
// runtime/fsdp, runtime/ac and runtime/train with GCC's -fsanitize-coverage=trace-pc: every basic
// block calls __sanitizer_cov_trace_pc (defined here), which sets the slot of the edge from the
// thread's previous block to this one (AFL's hash: cur ^ prev, prev = cur >> 1) and records the
// block's address. Both tables live in one shared anonymous mapping made before main, so a
// persistent worker forked from the campaign (harness/isolation) writes where the campaign reads.
// Addresses are taken relative to the executable's start, so the hashes do not move with ASLR.
// In a build without instrumentation nothing calls the hook; instrumented() says which build this is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

extern "C" void __sanitizer_cov_trace_pc();

namespace shardfuzz::fuzz::coverage {

inline constexpr std::size_t kEdgeSlots = std::size_t{1} << 16;
inline constexpr std::size_t kBlockSlots = std::size_t{1} << 16;

// Whether this executable's runtime was compiled with the coverage hook (SHARDFUZZ_COVERAGE).
bool instrumented();

// Clears the edges hit (not the blocks reached): call before a case.
void clear_edges();

// The edges of the accumulated map `seen` (kEdgeSlots bytes; sized on first use) that the runs
// since clear_edges() hit for the first time; merges them into `seen`.
int merge_new_edges(std::vector<uint8_t>& seen);

// Distinct edges in `seen`.
int count_edges(const std::vector<uint8_t>& seen);

// The distinct blocks reached since the process started (the worker's included), as offsets
// from the executable's start.
std::vector<uintptr_t> blocks_reached();

// Blocks reached per source folder ("runtime/fsdp", "runtime/ac", "runtime/train"; "other" for
// code inlined from headers), by asking addr2line (binutils) for each block's outermost function.
// Empty when addr2line cannot be run.
std::map<std::string, int> blocks_by_folder(const std::vector<uintptr_t>& blocks);

// The same per-block folder answers, one per block (empty when addr2line cannot be run).
std::vector<std::string> folders_of(const std::vector<uintptr_t>& blocks);

// Edges of `seen` per folder of the block each edge enters (the block that first set its slot).
std::map<std::string, int> edges_by_folder(const std::vector<uint8_t>& seen);

}  // namespace shardfuzz::fuzz::coverage
