// Breadth-first over the wait-for edges: the shortest chain to every rank that waits on nobody.
#include "runtime/comm/wait_for.h"

#include <algorithm>
#include <map>
#include <queue>
#include <sstream>

namespace shardfuzz::comm {
namespace {

constexpr std::size_t kChainsShown = 4;

std::string describe(const RankActivity& a) {
  const std::string last = a.last.empty() ? ", having entered no collective" : " (last entered " + a.last + ")";
  switch (a.state) {
    case RankActivity::State::Running: return "is running outside any collective" + last;
    case RankActivity::State::Paused: return "is paused, in no collective" + last;
    case RankActivity::State::Exited: return "has returned from its rank function";
    case RankActivity::State::Waiting: break;
  }
  return "is waiting";
}

std::string hop(int from, int to, const RankActivity& a) {
  return "rank " + std::to_string(from) + " is waiting on rank " + std::to_string(to) + " in '" + a.group +
         "' at sequence " + std::to_string(a.sequence) + " (" + a.op + ")";
}

// The hops from `from` to `to` along the breadth-first tree.
std::vector<std::string> chain(const std::vector<RankActivity>& world, const std::map<int, int>& parent, int to) {
  std::vector<std::string> hops;
  for (int r = to; parent.at(r) >= 0; r = parent.at(r))
    hops.push_back(hop(parent.at(r), r, world[static_cast<std::size_t>(parent.at(r))]));
  std::reverse(hops.begin(), hops.end());
  return hops;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

bool valid(const std::vector<RankActivity>& world, int r) { return r >= 0 && r < static_cast<int>(world.size()); }

}  // namespace

Attribution attribute(const std::vector<RankActivity>& world, int from) {
  Attribution out;
  if (!valid(world, from) || world[static_cast<std::size_t>(from)].state != RankActivity::State::Waiting) return out;
  std::map<int, int> parent{{from, -1}};
  std::queue<int> todo;
  todo.push(from);
  std::vector<int> ends;
  while (!todo.empty()) {
    const int r = todo.front();
    todo.pop();
    const RankActivity& a = world[static_cast<std::size_t>(r)];
    if (a.state != RankActivity::State::Waiting) {
      ends.push_back(r);
      continue;
    }
    for (int next : a.on)
      if (valid(world, next) && parent.emplace(next, r).second) todo.push(next);
  }
  if (!ends.empty()) {
    out.culprits = ends;
    std::sort(out.culprits.begin(), out.culprits.end());
    std::vector<std::string> who, chains;
    for (int c : out.culprits) {
      who.push_back("rank " + std::to_string(c) + " " + describe(world[static_cast<std::size_t>(c)]));
      // A rank `from` waits on directly is named by its own error already; a longer chain is shown.
      const std::vector<std::string> hops = chain(world, parent, c);
      if (hops.size() > 1 && chains.size() < kChainsShown) chains.push_back(join(hops, "; "));
    }
    out.text = std::string(out.culprits.size() == 1 ? "culprit: " : "culprits: ") + join(who, "; ");
    if (!chains.empty()) out.text += ": " + join(chains, ". ");
    return out;
  }
  // Every rank reached waits: follow the first edge until a rank repeats. Those ranks entered
  // collectives in orders that can never meet.
  std::vector<int> path;
  std::map<int, std::size_t> at;
  int r = from;
  while (valid(world, r) && at.emplace(r, path.size()).second) {
    path.push_back(r);
    const RankActivity& a = world[static_cast<std::size_t>(r)];
    r = a.on.empty() ? -1 : a.on.front();
  }
  if (!valid(world, r)) return out;
  std::vector<std::string> hops;
  for (std::size_t i = at[r]; i < path.size(); ++i) {
    const int next = i + 1 < path.size() ? path[i + 1] : r;
    out.culprits.push_back(path[i]);
    hops.push_back(hop(path[i], next, world[static_cast<std::size_t>(path[i])]));
  }
  std::sort(out.culprits.begin(), out.culprits.end());
  out.cycle = true;
  std::vector<std::string> names;
  for (int c : out.culprits) names.push_back(std::to_string(c));
  out.text = "a deadlock: ranks [" + join(names, ", ") +
             "] wait on each other (collectives entered in different orders): " + join(hops, "; ");
  return out;
}

}  // namespace shardfuzz::comm
