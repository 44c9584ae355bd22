// StoreWorld's collectives: publish, wait (deadline and abort), judge, compute in rank order.
#include "runtime/comm/store_world.h"

#include "runtime/comm/collective_checks.h"
#include "runtime/comm/group_state.h"
#include "runtime/comm/wait_for.h"

#include <ATen/ATen.h>
#include <c10/util/accumulate.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

namespace shardfuzz::comm {
namespace {

using Kind = CollectiveError::Kind;
using Bytes = std::vector<uint8_t>;
using detail::Call;

// What every group of this process shares: the store, the world's shape and its recovery epoch
// (group keys carry it, so a recovered world never reads a failed round's keys).
struct WorldShared {
  c10::intrusive_ptr<c10d::Store> store;
  StoreWorldOptions options;
  std::atomic<int> epoch{0};

  std::string abort_key(int e) const { return options.prefix + "/abort/" + std::to_string(e); }
  std::string recover_key(int e) const { return options.prefix + "/recover/" + std::to_string(e); }
  std::string left_key() const { return left_key_of(options.prefix); }
  static std::string left_key_of(const std::string& prefix) { return prefix + "/left"; }
  static std::string activity_key_of(const std::string& prefix, int rank) {
    return prefix + "/activity/" + std::to_string(rank);
  }

  // What this rank is doing, for its peers' wait-for graph (comm/wait_for.h): published when a
  // wait grows long, a pause starts, or the rank leaves; read when a peer's deadline fires.
  void publish(const nlohmann::json& activity);
  std::mutex mu;
  std::string last;  // the last collective this rank entered
  std::string last_entered() {
    std::lock_guard<std::mutex> lock(mu);
    return last;
  }
};

// What a rank that gives up at its deadline adds to its round's arrival count.
constexpr int64_t kGaveUp = int64_t{1} << 40;

void write_activity(c10d::Store& store, const std::string& prefix, int rank, const nlohmann::json& activity) {
  const std::string text = activity.dump();
  store.set(WorldShared::activity_key_of(prefix, rank), std::vector<uint8_t>(text.begin(), text.end()));
}

// What `rank` published last; discarded (is_discarded()) when it published nothing readable.
nlohmann::json read_activity(c10d::Store& store, const std::string& prefix, int rank) {
  const std::string key = WorldShared::activity_key_of(prefix, rank);
  if (!store.check({key})) return nlohmann::json(nlohmann::json::value_t::discarded);
  const std::vector<uint8_t> bytes = store.get(key);
  return nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
}

void WorldShared::publish(const nlohmann::json& activity) { write_activity(*store, options.prefix, options.rank, activity); }

// Every rank's published activity, with the ranks each waiting one still misses (a round's member
// keys that are not in the store); a rank that published nothing is running.
std::vector<RankActivity> read_activities(c10d::Store& store, const std::string& prefix, int world_size) {
  std::vector<RankActivity> world(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    const nlohmann::json j = read_activity(store, prefix, r);
    if (j.is_discarded()) continue;
    RankActivity& a = world[static_cast<std::size_t>(r)];
    const std::string state = j.value("state", "running");
    a.last = j.value("last", "");
    if (state == "paused") a.state = RankActivity::State::Paused;
    if (state == "exited") a.state = RankActivity::State::Exited;
    if (state != "waiting") continue;
    const std::string round = j.value("round", "");
    const auto members = j.value("members", std::vector<int>{});
    // A round every member reached goes on; one a rank gave up on still waits for its missing
    // members (its ranks fail because of them).
    if (store.check({round + "state"}) &&
        store.add(round + "state", 0) % kGaveUp >= static_cast<int64_t>(members.size()))
      continue;
    a.state = RankActivity::State::Waiting;
    a.group = j.value("group", "");
    a.sequence = j.value("sequence", uint64_t{0});
    a.op = j.value("op", "");
    for (std::size_t i = 0; i < members.size(); ++i)
      if (!store.check({round + std::to_string(i)})) a.on.push_back(members[i]);
  }
  return world;
}

// One rank's contribution to a collective as it travels: the call's metadata as JSON, then the
// buffer's bytes (host copy).
Bytes encode(const Call& call, const at::Tensor& host) {
  const nlohmann::json meta = {{"op", call.op},           {"signature", call.signature}, {"invalid", call.invalid},
                               {"send", call.send_rows},  {"recv", call.recv_rows},      {"color", call.color},
                               {"key", call.key},         {"name", call.split_name}};
  const std::string text = meta.dump();
  const auto n = static_cast<uint32_t>(text.size());
  const std::size_t payload = host.defined() ? static_cast<std::size_t>(host.numel() * host.element_size()) : 0;
  Bytes out(sizeof n + text.size() + payload);
  std::memcpy(out.data(), &n, sizeof n);
  std::memcpy(out.data() + sizeof n, text.data(), text.size());
  if (payload) std::memcpy(out.data() + sizeof n + text.size(), host.data_ptr(), payload);
  return out;
}

struct Received {
  Call call;
  Bytes bytes;
  std::size_t offset = 0;  // where the payload starts in bytes
  // A flat CPU alias of `numel` elements of the payload from element `first`.
  at::Tensor payload(int64_t first, int64_t numel, at::ScalarType dtype) {
    auto* base = bytes.data() + offset + first * static_cast<int64_t>(c10::elementSize(dtype));
    return at::from_blob(base, {numel}, at::TensorOptions().dtype(dtype));
  }
};

Received decode(Bytes bytes) {
  Received r;
  uint32_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof n);
  const auto meta = nlohmann::json::parse(bytes.begin() + sizeof n, bytes.begin() + sizeof n + n);
  r.call.op = meta.at("op").get<std::string>();
  r.call.signature = meta.at("signature").get<std::string>();
  r.call.invalid = meta.at("invalid").get<std::string>();
  r.call.send_rows = meta.at("send").get<std::vector<int64_t>>();
  r.call.recv_rows = meta.at("recv").get<std::vector<int64_t>>();
  r.call.color = meta.at("color").get<int>();
  r.call.key = meta.at("key").get<int>();
  r.call.split_name = meta.at("name").get<std::string>();
  r.offset = sizeof n + n;
  r.bytes = std::move(bytes);
  return r;
}

at::Tensor host_copy(const at::Tensor& t) {
  return t.device().is_cpu() ? t.reshape({-1}) : t.reshape({-1}).to(at::kCPU);
}

std::string join(const std::vector<int>& v) {
  std::ostringstream os;
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str();
}

class StoreCommunicator final : public Communicator {
 public:
  StoreCommunicator(std::shared_ptr<WorldShared> world, std::string name, std::string key, std::vector<int> members)
      : world_(std::move(world)), name_(std::move(name)), key_(std::move(key)), members_(std::move(members)) {
    const int me = world_->options.rank;
    rank_ = static_cast<int>(std::find(members_.begin(), members_.end(), me) - members_.begin());
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int global_rank() const override { return members_[static_cast<std::size_t>(rank_)]; }
  const std::vector<int>& global_ranks() const override { return members_; }
  const std::string& name() const override { return name_; }
  uint64_t sequence() const override { return world_->epoch.load() == epoch_ ? sequence_ : 0; }

  void all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) override {
    const int n = size();
    const Call call = detail::all_gather_call(output, input, n);
    auto peers = exchange(call, call.invalid.empty() ? host_copy(input) : at::Tensor());
    const int64_t chunk = input.numel();
    if (chunk == 0) return;
    at::Tensor gathered = host_target(output);
    for (int r = 0; r < n; ++r)
      gathered.narrow(0, r * chunk, chunk).copy_(peers[r].payload(0, chunk, input.scalar_type()));
    land(output, gathered);
  }

  void reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) override {
    const Call call = detail::reduce_scatter_call(output, input, op, size());
    auto peers = exchange(call, call.invalid.empty() ? host_copy(input) : at::Tensor());
    if (output.numel() == 0) return;
    at::Tensor target = host_target(output);
    reduce_into(target, peers, rank_ * output.numel(), op);
    land(output, target);
  }

  void all_reduce(at::Tensor& tensor, ReduceOp op) override {
    const Call call = detail::all_reduce_call(tensor, op);
    auto peers = exchange(call, call.invalid.empty() ? host_copy(tensor) : at::Tensor());
    if (tensor.numel() == 0) return;
    // Into a fresh buffer first, as ThreadWorld does (its peers may still read this rank's tensor),
    // so both backends' allocators see the same bytes.
    at::Tensor result = at::empty({tensor.numel()}, at::TensorOptions().dtype(tensor.scalar_type()));
    reduce_into(result, peers, 0, op);
    tensor.view({-1}).copy_(result);
  }

  void all_to_all_single(at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                         const std::vector<int64_t>& input_split_sizes) override {
    const int n = size();
    const Call call = detail::all_to_all_call(output, input, output_split_sizes, input_split_sizes, n);
    const std::vector<int64_t> recv_rows = call.recv_rows;
    auto peers = exchange(call, call.invalid.empty() ? host_copy(input) : at::Tensor());
    const int64_t row = c10::multiply_integers(input.sizes().slice(1));
    if (output.numel() == 0) return;
    at::Tensor received = host_target(output);
    int64_t out_row = 0;
    for (int r = 0; r < n; ++r) {
      const auto& sent = peers[r].call.send_rows;
      const int64_t in_row = std::accumulate(sent.begin(), sent.begin() + rank_, int64_t{0});
      const int64_t count = recv_rows[r] * row;
      if (count > 0)
        received.narrow(0, out_row * row, count).copy_(peers[r].payload(in_row * row, count, input.scalar_type()));
      out_row += recv_rows[r];
    }
    land(output, received);
  }

  void broadcast(at::Tensor& tensor, int root) override {
    const Call call = detail::broadcast_call(tensor, root, size());
    auto peers = exchange(call, call.invalid.empty() && rank_ == root ? host_copy(tensor) : at::Tensor());
    if (rank_ != root && tensor.numel())
      tensor.view({-1}).copy_(peers[root].payload(0, tensor.numel(), tensor.scalar_type()));
  }

  void barrier() override {
    exchange(detail::barrier_call(), at::Tensor());
  }

  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    const uint64_t seq = sequence_;
    auto peers = exchange(detail::split_call(color, key, name), at::Tensor());
    if (color < 0) return nullptr;
    std::vector<std::tuple<int, int>> order;  // (key, parent rank) of this color's members
    for (int r = 0; r < size(); ++r)
      if (peers[r].call.color == color) order.emplace_back(peers[r].call.key, r);
    std::sort(order.begin(), order.end());
    std::vector<int> members;
    int namer = size();
    for (const auto& [k, r] : order) members.push_back(members_[r]), namer = std::min(namer, r);
    // The lowest parent rank's name wins, as in ThreadWorld.
    return std::make_shared<StoreCommunicator>(world_, peers[namer].call.split_name,
                                               key_ + "/s" + std::to_string(seq) + "c" + std::to_string(color),
                                               std::move(members));
  }

  // A planned hang or straggler: its peers' wait-for graph sees it paused.
  void pause(std::chrono::milliseconds duration) override {
    world_->publish({{"state", "paused"}, {"last", world_->last_entered()}});
    std::this_thread::sleep_for(duration);
    world_->publish({{"state", "running"}, {"last", world_->last_entered()}});
  }

  void abort_world(const std::string& reason) override {
    const int e = world_->epoch.load();
    // The first reason wins.
    if (world_->store->add(world_->abort_key(e) + "/count", 1) == 1)
      world_->store->set(world_->abort_key(e),
                         bytes_of("rank " + std::to_string(world_->options.rank) + " aborted it: " + reason));
  }

  void leave(const std::string& reason) {
    mark_rank_left(*world_->store, world_->options.prefix, world_->options.rank, reason);
  }

  int recover_world() override {
    const int e = world_->epoch.load();
    const int n = world_->options.world_size;
    const std::string key = world_->recover_key(e);
    world_->store->add(key, 1);
    const auto deadline = std::chrono::steady_clock::now() + world_->options.deadline;
    for (auto pause = std::chrono::microseconds(50);; pause = std::min(pause * 2, std::chrono::microseconds(2000))) {
      const int64_t arrived = world_->store->add(key, 0);
      if (arrived >= n) break;
      if (world_->store->check({world_->left_key()})) {
        const Bytes why = world_->store->get(world_->left_key());
        throw CollectiveError(Kind::Aborted, "world", world_->options.rank, "recover_world", static_cast<uint64_t>(e),
                              "rank " + std::to_string(world_->options.rank) + ": recover_world " + std::to_string(e + 1) +
                                  ": " + std::string(why.begin(), why.end()));
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw CollectiveError(Kind::Deadline, "world", world_->options.rank, "recover_world", static_cast<uint64_t>(e),
                              "rank " + std::to_string(world_->options.rank) + ": recover_world " + std::to_string(e + 1) +
                                  ": only " + std::to_string(arrived) + " of " + std::to_string(n) + " ranks came within " +
                                  std::to_string(world_->options.deadline.count()) + " ms");
      std::this_thread::sleep_for(pause);
    }
    int expected = e;
    world_->epoch.compare_exchange_strong(expected, e + 1);
    return e + 1;
  }

 private:
  static Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
  // A wait longer than this is published for the peers' wait-for graph (a short one costs no
  // store round trip; a deadline is seconds).
  static constexpr auto kPublishWaitAfter = std::chrono::milliseconds(50);

  // The rank's published wait, taken back (as running) when the exchange completes. One that fails
  // stays published: the rank failed because of the ranks it waited on, and a peer whose deadline
  // fires later follows it to them (mark_rank_left keeps it too).
  struct PublishedWait {
    explicit PublishedWait(WorldShared& world) : world_(world) {}
    ~PublishedWait() {
      if (!on || !completed) return;
      try {
        world_.publish({{"state", "running"}, {"last", world_.last_entered()}});
      } catch (...) {  // a store gone with the world: nobody is left to read it
      }
    }
    void waiting(const nlohmann::json& activity) {
      world_.publish(activity);
      on = true;
    }
    WorldShared& world_;
    bool on = false;
    bool completed = false;
  };

  CollectiveError error(Kind kind, const std::string& op, uint64_t seq, const std::string& message) const {
    return CollectiveError(kind, name_, global_rank(), op, seq, "rank " + std::to_string(global_rank()) + ": " + message);
  }

  // Publishes this rank's call, waits for every member's (failing at the deadline or when the world
  // is aborted), judges them as ThreadWorld does and returns them by group rank.
  std::vector<Received> exchange(const Call& call, const at::Tensor& host) {
    const int e = world_->epoch.load();
    if (e != epoch_) epoch_ = e, sequence_ = 0;
    const uint64_t seq = sequence_++;
    const std::string base = key_ + "/e" + std::to_string(e) + "/" + std::to_string(seq) + "/";
    auto& store = *world_->store;
    store.set(base + std::to_string(rank_), encode(call, host));
    std::vector<std::string> keys;
    for (int r = 0; r < size(); ++r) keys.push_back(base + std::to_string(r));
    // The round's state counts arrivals; a rank that gives up at its deadline adds kGaveUp. Whoever
    // sees kGaveUp fails (the ranks waiting and those arriving later), whoever sees every arrival
    // first goes on: one verdict per round, as in ThreadWorld, though ranks never meet.
    const std::string state = base + "state", gave_up = base + "gave_up";
    int64_t arrived = store.add(state, 1);
    const std::string abort_key = world_->abort_key(e);
    const auto entered = std::chrono::steady_clock::now();
    const auto deadline = entered + world_->options.deadline;
    const auto where = [&] { return " in group '" + name_ + "' at sequence " + std::to_string(seq); };
    const std::string here = "'" + name_ + "' at sequence " + std::to_string(seq) + ": " + call.signature;
    {
      std::lock_guard<std::mutex> lock(world_->mu);
      world_->last = here;
    }
    PublishedWait published(*world_);
    const auto publish_wait = [&] {
      if (!published.on)
        published.waiting({{"state", "waiting"}, {"group", name_}, {"sequence", seq}, {"op", call.signature},
                           {"round", base}, {"members", members_}, {"last", here}});
    };
    for (auto pause = std::chrono::microseconds(20); arrived != size();
         pause = std::min(pause * 2, std::chrono::microseconds(2000))) {
      if (!published.on && std::chrono::steady_clock::now() - entered > kPublishWaitAfter) publish_wait();
      if (arrived >= kGaveUp) {
        const Bytes why = store.get(gave_up);
        throw error(Kind::Deadline, call.op, seq, call.op + where() + ": " + std::string(why.begin(), why.end()));
      }
      for (const std::string& key : {abort_key, world_->left_key()}) {
        if (!store.check({key})) continue;
        const Bytes why = store.get(key);
        throw error(Kind::Aborted, call.op, seq,
                    call.op + where() + ": the world was aborted: " + std::string(why.begin(), why.end()));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::vector<int> missing;
        for (int r = 0; r < size(); ++r)
          if (!store.check({keys[static_cast<std::size_t>(r)]})) missing.push_back(members_[r]);
        std::string why = "rank " + std::to_string(global_rank()) + " gave up waiting: deadline of " +
                          std::to_string(world_->options.deadline.count()) + " ms exceeded" + where() + " waiting in " +
                          call.signature + ": missing ranks [" + join(missing) + "]";
        publish_wait();  // before reading the graph: this rank is one of its waiters
        const std::string culprit =
            attribute(read_activities(store, world_->options.prefix, world_->options.world_size), global_rank()).text;
        if (!culprit.empty()) why += "; " + culprit;
        store.set(gave_up, bytes_of(why));
        // Every rank arrived just before: they went on, and so does this one.
        if (store.add(state, kGaveUp) - kGaveUp != size()) throw error(Kind::Deadline, call.op, seq, why);
        break;
      }
      std::this_thread::sleep_for(pause);
      arrived = store.add(state, 0);
    }
    published.completed = true;
    std::vector<Received> peers;
    std::vector<Call> calls;
    for (const auto& k : keys) {
      peers.push_back(decode(store.get(k)));
      calls.push_back(peers.back().call);
    }
    // The last rank to have read the round deletes it.
    if (store.add(base + "read", 1) == size()) {
      for (const auto& k : keys) store.deleteKey(k);
      for (const char* k : {"read", "state", "gave_up"}) store.deleteKey(base + k);
    }
    const detail::CallVerdict verdict = detail::judge_calls(calls, members_, name_, seq);
    if (verdict.failed) throw error(verdict.kind, call.op, seq, verdict.message);
    return peers;
  }

  // Where a result is assembled: the output itself on the CPU, a host buffer off it.
  static at::Tensor host_target(const at::Tensor& output) {
    return output.device().is_cpu() ? output.view({-1}) : at::empty({output.numel()}, output.options().device(at::kCPU));
  }
  static void land(at::Tensor& output, const at::Tensor& target) {
    if (!output.device().is_cpu()) output.view({-1}).copy_(target);
  }

  // Chunk [first, first + target.numel()) of every rank's payload, reduced in rank order 0..n-1
  // (as ThreadWorld does, so both round identically).
  static void reduce_into(at::Tensor& target, std::vector<Received>& peers, int64_t first, ReduceOp op) {
    const int64_t numel = target.numel();
    const at::ScalarType dtype = target.scalar_type();
    target.copy_(peers[0].payload(first, numel, dtype));
    for (std::size_t r = 1; r < peers.size(); ++r) target.add_(peers[r].payload(first, numel, dtype));
    detail::finish_reduction(target, op, static_cast<int64_t>(peers.size()));
  }

  std::shared_ptr<WorldShared> world_;
  std::string name_;
  std::string key_;
  std::vector<int> members_;
  int rank_ = 0;
  uint64_t sequence_ = 0;
  int epoch_ = 0;
};

}  // namespace

void mark_rank_left(c10d::Store& store, const std::string& prefix, int rank, const std::string& reason) {
  const std::string key = WorldShared::left_key_of(prefix);
  const std::string why = "rank " + std::to_string(rank) + " left: " + reason;
  // The first rank to leave is the one named.
  if (store.add(key + "/count", 1) == 1) store.set(key, std::vector<uint8_t>(why.begin(), why.end()));
  // A rank that failed waiting stays a waiter in its peers' wait-for graph: it left because of the
  // ranks it waited on.
  const nlohmann::json last = read_activity(store, prefix, rank);
  if (!last.is_discarded() && last.value("state", "") == "waiting") return;
  write_activity(store, prefix, rank, {{"state", "exited"}});
}

void leave_store_world(Communicator& world, const std::string& reason) {
  auto* store_world = dynamic_cast<StoreCommunicator*>(&world);
  if (!store_world) throw std::invalid_argument("leave_store_world: '" + world.name() + "' is not a StoreWorld group");
  store_world->leave(reason);
}

std::shared_ptr<Communicator> connect_store_world(c10::intrusive_ptr<c10d::Store> store,
                                                  const StoreWorldOptions& options) {
  if (options.world_size < 1) throw std::invalid_argument("world_size: " + std::to_string(options.world_size) + " < 1");
  if (options.rank < 0 || options.rank >= options.world_size)
    throw std::invalid_argument("rank: " + std::to_string(options.rank) + " is outside 0.." +
                                std::to_string(options.world_size - 1));
  auto world = std::make_shared<WorldShared>();
  world->store = std::move(store);
  world->options = options;
  std::vector<int> members(static_cast<std::size_t>(options.world_size));
  std::iota(members.begin(), members.end(), 0);
  return std::make_shared<StoreCommunicator>(world, "world", options.prefix + "/world", std::move(members));
}

}  // namespace shardfuzz::comm
