// The coverage hook and its shared tables (fuzz/coverage/edge_map.h).
#include "fuzz/coverage/edge_map.h"

#include "harness/files/temp_dir.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace shardfuzz::fuzz::coverage {
namespace {

struct Tables {
  std::atomic<uint8_t> edges[kEdgeSlots];
  std::atomic<uintptr_t> edge_into[kEdgeSlots];  // the block an edge's slot was first set entering
  std::atomic<uintptr_t> blocks[kBlockSlots];  // open addressing; 0 = empty
};

Tables* g_tables = nullptr;
uintptr_t g_load_bias = 0;  // the executable's load address (0 unless position-independent)

int first_object(struct dl_phdr_info* info, size_t, void* bias) {
  *static_cast<uintptr_t*>(bias) = info->dlpi_addr;
  return 1;  // the first object is the executable itself
}

// Made before main (and so before any worker is forked). Instrumented code that runs earlier,
// during static initialisation, is not counted.
__attribute__((constructor)) void map_tables() {
  void* p = ::mmap(nullptr, sizeof(Tables), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  dl_iterate_phdr(first_object, &g_load_bias);
  g_tables = static_cast<Tables*>(p);  // zero-filled by mmap
}

uintptr_t mixed(uintptr_t x) {
  x ^= x >> 17;
  x *= 0xed5ad4bbU;
  x ^= x >> 11;
  return x;
}

void record_block(Tables& t, uintptr_t pc) {
  for (std::size_t i = mixed(pc) & (kBlockSlots - 1), n = 0; n < kBlockSlots; i = (i + 1) & (kBlockSlots - 1), ++n) {
    uintptr_t seen = t.blocks[i].load(std::memory_order_relaxed);
    if (seen == pc) return;
    if (seen == 0 && t.blocks[i].compare_exchange_strong(seen, pc, std::memory_order_relaxed)) return;
    if (seen == pc) return;  // another thread just put it there
  }
}

}  // namespace

bool instrumented() {
#ifdef SHARDFUZZ_COVERAGE
  return true;
#else
  return false;
#endif
}

void clear_edges() {
  if (!g_tables) return;
  for (auto& e : g_tables->edges) e.store(0, std::memory_order_relaxed);
}

int merge_new_edges(std::vector<uint8_t>& seen) {
  seen.resize(kEdgeSlots, 0);
  if (!g_tables) return 0;
  int fresh = 0;
  for (std::size_t i = 0; i < kEdgeSlots; ++i)
    if (g_tables->edges[i].load(std::memory_order_relaxed) && !seen[i]) {
      seen[i] = 1;
      ++fresh;
    }
  return fresh;
}

int count_edges(const std::vector<uint8_t>& seen) {
  int n = 0;
  for (uint8_t b : seen) n += b != 0;
  return n;
}

std::vector<uintptr_t> blocks_reached() {
  std::vector<uintptr_t> out;
  if (!g_tables) return out;
  for (const auto& b : g_tables->blocks)
    if (uintptr_t pc = b.load(std::memory_order_relaxed)) out.push_back(pc);
  return out;
}

std::vector<std::string> folders_of(const std::vector<uintptr_t>& blocks) {
  std::vector<std::string> out;
  if (blocks.empty()) return out;
  harness::TempDir dir("shardfuzz-coverage");
  const std::string list = dir.path() + "/blocks.txt";
  {
    std::ofstream f(list);
    for (uintptr_t pc : blocks) f << "0x" << std::hex << pc << "\n";
  }
  // -a: each answer starts with the address; -i: then the inline chain, the outermost function last.
  const std::string command = "addr2line -a -i -e /proc/" + std::to_string(::getpid()) + "/exe < " + list + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  std::string outermost;
  bool started = false;
  auto answer = [&] {
    if (!started) return;
    const std::size_t at = outermost.find("runtime/");
    const std::size_t slash = at == std::string::npos ? at : outermost.find('/', at + 8);
    out.push_back(slash == std::string::npos ? "other" : outermost.substr(at, slash - at));
    outermost.clear();
  };
  char line[4096];
  while (std::fgets(line, sizeof line, pipe)) {
    if (line[0] == '0' && line[1] == 'x') {
      answer();
      started = true;
      continue;
    }
    outermost = line;
  }
  answer();
  ::pclose(pipe);
  if (out.size() != blocks.size()) out.clear();  // addr2line missing or cut short
  return out;
}

std::map<std::string, int> blocks_by_folder(const std::vector<uintptr_t>& blocks) {
  std::map<std::string, int> out;
  for (const std::string& folder : folders_of(blocks)) ++out[folder];
  return out;
}

std::map<std::string, int> edges_by_folder(const std::vector<uint8_t>& seen) {
  std::vector<uintptr_t> into;
  if (g_tables)
    for (std::size_t i = 0; i < seen.size() && i < kEdgeSlots; ++i)
      if (seen[i]) into.push_back(g_tables->edge_into[i].load(std::memory_order_relaxed));
  return blocks_by_folder(into);
}

}  // namespace shardfuzz::fuzz::coverage

// The hook GCC's -fsanitize-coverage=trace-pc calls at the start of every basic block.
extern "C" void __sanitizer_cov_trace_pc() {
  using namespace shardfuzz::fuzz::coverage;
  Tables* t = g_tables;
  if (!t) return;
  const uintptr_t pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0)) - g_load_bias;
  thread_local uintptr_t previous = 0;
  const uintptr_t current = mixed(pc);
  std::atomic<uint8_t>& edge = t->edges[(current ^ previous) & (kEdgeSlots - 1)];
  if (!edge.load(std::memory_order_relaxed)) {
    edge.store(1, std::memory_order_relaxed);
    t->edge_into[&edge - t->edges].store(pc, std::memory_order_relaxed);
  }
  previous = current >> 1;
  record_block(*t, pc);
}
