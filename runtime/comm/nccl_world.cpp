// NcclCommunicator: one rank's handle on an NCCL communicator (SHARDFUZZ_NCCL builds only).
#include "runtime/comm/nccl_world.h"

#include "runtime/comm/collective_checks.h"

#include <stdexcept>

#ifdef SHARDFUZZ_NCCL
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/accumulate.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <thread>
#endif

namespace shardfuzz::comm {

#ifndef SHARDFUZZ_NCCL

bool nccl_built() { return false; }

std::shared_ptr<Communicator> connect_nccl_world(c10::intrusive_ptr<c10d::Store>, const NcclWorldOptions&) {
  throw std::invalid_argument("--backend nccl: this build has no NCCL (configure with a CUDA LibTorch and NCCL, "
                              "docs/gpu-path.md)");
}

#else

bool nccl_built() { return true; }

namespace {

using Kind = CollectiveError::Kind;

ncclDataType_t nccl_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kLong: return ncclInt64;
    case at::kInt: return ncclInt32;
    case at::kChar: return ncclInt8;
    case at::kByte:
    case at::kBool: return ncclUint8;
    default: throw std::invalid_argument("NCCL has no type for " + detail::dtype_name(t));
  }
}

struct WorldShared {
  c10::intrusive_ptr<c10d::Store> store;
  NcclWorldOptions options;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<WorldShared> world, std::string name, std::vector<int> members, ncclComm_t comm)
      : world_(std::move(world)), name_(std::move(name)), members_(std::move(members)), comm_(comm),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false,
                                             static_cast<c10::DeviceIndex>(world_->options.device))) {
    const int me = world_->options.rank;
    rank_ = static_cast<int>(std::find(members_.begin(), members_.end(), me) - members_.begin());
  }
  ~NcclCommunicator() override {
    if (comm_) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int global_rank() const override { return members_[static_cast<std::size_t>(rank_)]; }
  const std::vector<int>& global_ranks() const override { return members_; }
  const std::string& name() const override { return name_; }
  uint64_t sequence() const override { return sequence_; }

  void all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) override {
    run(detail::all_gather_call(output, input, size()), [&] {
      return ncclAllGather(input.data_ptr(), output.data_ptr(), static_cast<size_t>(input.numel()),
                           nccl_type(input.scalar_type()), comm_, stream_.stream());
    });
  }

  void reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) override {
    run(detail::reduce_scatter_call(output, input, op, size()), [&] {
      return ncclReduceScatter(input.data_ptr(), output.data_ptr(), static_cast<size_t>(output.numel()),
                               nccl_type(input.scalar_type()), ncclSum, comm_, stream_.stream());
    });
    detail::finish_reduction(output, op, size());
  }

  void all_reduce(at::Tensor& tensor, ReduceOp op) override {
    run(detail::all_reduce_call(tensor, op), [&] {
      return ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor.scalar_type()), ncclSum, comm_, stream_.stream());
    });
    detail::finish_reduction(tensor, op, size());
  }

  void all_to_all_single(at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                         const std::vector<int64_t>& input_split_sizes) override {
    const detail::Call call = detail::all_to_all_call(output, input, output_split_sizes, input_split_sizes, size());
    run(call, [&] {
      const int64_t row = c10::multiply_integers(input.sizes().slice(1));
      const ncclDataType_t type = nccl_type(input.scalar_type());
      const auto* in = static_cast<const char*>(input.data_ptr());
      auto* out = static_cast<char*>(output.data_ptr());
      const int64_t bytes_per_row = row * input.element_size();
      int64_t in_off = 0, out_off = 0;
      ncclResult_t r = ncclGroupStart();
      for (int p = 0; p < size() && r == ncclSuccess; ++p) {
        r = ncclSend(in + in_off * bytes_per_row, static_cast<size_t>(call.send_rows[p] * row), type, p, comm_,
                     stream_.stream());
        if (r == ncclSuccess)
          r = ncclRecv(out + out_off * bytes_per_row, static_cast<size_t>(call.recv_rows[p] * row), type, p, comm_,
                       stream_.stream());
        in_off += call.send_rows[p];
        out_off += call.recv_rows[p];
      }
      const ncclResult_t end = ncclGroupEnd();
      return r == ncclSuccess ? end : r;
    });
  }

  void broadcast(at::Tensor& tensor, int root) override {
    run(detail::broadcast_call(tensor, root, size()), [&] {
      return ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor.scalar_type()), root, comm_, stream_.stream());
    });
  }

  void barrier() override {
    at::Tensor one = at::ones({1}, at::TensorOptions().dtype(at::kFloat).device(device()));
    run(detail::barrier_call(), [&] {
      return ncclAllReduce(one.data_ptr(), one.data_ptr(), 1, ncclFloat32, ncclSum, comm_, stream_.stream());
    });
  }

  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    // Who joins which group: every rank's (color, key), gathered first.
    at::Tensor mine = at::tensor(std::vector<int64_t>{color, key}, at::kLong).to(device());
    at::Tensor all = at::empty({2 * size()}, mine.options());
    all_gather_into_tensor(all, mine);
    const at::Tensor host = all.cpu();
    const std::vector<int64_t> ck(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t child = nullptr;
    const uint64_t seq = sequence_;
    check("split", seq, ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config));
    // Non-blocking: the parent is busy until the split completes, and so is the child.
    wait_ready(comm_, "split", seq);
    if (child) wait_ready(child, "split", seq);
    if (color < 0) return nullptr;
    std::vector<std::pair<int64_t, int>> order;
    for (int r = 0; r < size(); ++r)
      if (ck[2 * r] == color) order.emplace_back(ck[2 * r + 1], r);
    std::sort(order.begin(), order.end());
    std::vector<int> members;
    for (const auto& [k, r] : order) members.push_back(members_[r]);
    return std::make_shared<NcclCommunicator>(world_, name, std::move(members), child);
  }

  void abort_world(const std::string& reason) override {
    aborted_ = "aborted by rank " + std::to_string(global_rank()) + ": " + reason;
    if (comm_) ncclCommAbort(comm_), comm_ = nullptr;
  }

  int recover_world() override {
    throw CollectiveError(Kind::Aborted, name_, global_rank(), "recover_world", sequence_,
                          "rank " + std::to_string(global_rank()) +
                              ": recover_world: an NCCL world is not recovered in place (run without recovery)");
  }

 private:
  c10::Device device() const {
    return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(world_->options.device));
  }

  CollectiveError error(Kind kind, const std::string& op, uint64_t seq, const std::string& message) const {
    return CollectiveError(kind, name_, global_rank(), op, seq,
                           "rank " + std::to_string(global_rank()) + ": " + op + " in group '" + name_ +
                               "' at sequence " + std::to_string(seq) + ": " + message);
  }

  void check(const std::string& op, uint64_t seq, ncclResult_t r) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    const std::string why = ncclGetErrorString(r);
    if (comm_) ncclCommAbort(comm_), comm_ = nullptr;
    throw error(r == ncclInvalidArgument || r == ncclInvalidUsage ? Kind::InvalidArgument : Kind::Aborted, op, seq,
                "NCCL: " + why);
  }

  // Polls a non-blocking communicator until its last call was accepted (or failed, or the deadline).
  void wait_ready(ncclComm_t comm, const std::string& op, uint64_t seq) {
    const auto deadline = std::chrono::steady_clock::now() + world_->options.deadline;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm, &state);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) check(op, seq, state);
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(comm);
        if (comm == comm_) comm_ = nullptr;
        throw error(Kind::Deadline, op, seq,
                    "deadline of " + std::to_string(world_->options.deadline.count()) + " ms exceeded");
      }
      std::this_thread::yield();
    }
  }

  // One collective: the ranks first agree on its signature (a mismatch names both ranks), then it
  // runs on this communicator's stream after the caller's stream's work, and the caller's stream
  // waits for it; the host waits under the deadline.
  void run(const detail::Call& call, const std::function<ncclResult_t()>& enqueue) {
    const std::string& op = call.op;
    const std::string& signature = call.signature;
    const uint64_t seq = sequence_++;
    if (!comm_) throw error(Kind::Aborted, op, seq, aborted_.empty() ? "the communicator was aborted" : aborted_);
    agree(op, seq, call.invalid.empty() ? signature : "!" + call.invalid);
    const c10::cuda::CUDAGuard guard(device());
    const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(device().index());
    at::cuda::CUDAEvent ready, done;
    ready.record(caller);
    ready.block(stream_);
    check(op, seq, enqueue());
    wait_ready(comm_, op, seq);
    done.record(stream_);
    done.block(caller);
    const auto deadline = std::chrono::steady_clock::now() + world_->options.deadline;
    while (!done.query()) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) check(op, seq, state);
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        throw error(Kind::Deadline, op, seq,
                    "deadline of " + std::to_string(world_->options.deadline.count()) + " ms exceeded waiting in " +
                        signature);
      }
      std::this_thread::yield();
    }
  }

  // Every rank's hash of its signature, all-gathered (a collective of its own, not counted).
  void agree(const std::string& op, uint64_t seq, const std::string& signature) {
    if (size() == 1) {
      if (signature[0] == '!') throw error(Kind::InvalidArgument, op, seq, "invalid arguments: " + signature.substr(1));
      return;
    }
    const auto hash = static_cast<int64_t>(std::hash<std::string>{}(signature) & 0x7fffffffffffffffLL) *
                      (signature[0] == '!' ? -1 : 1);
    const c10::cuda::CUDAGuard guard(device());
    at::Tensor mine = at::full({1}, hash, at::TensorOptions().dtype(at::kLong).device(device()));
    at::Tensor all = at::empty({size()}, mine.options());
    check(op, seq, ncclAllGather(mine.data_ptr(), all.data_ptr(), 1, ncclInt64, comm_, stream_.stream()));
    wait_ready(comm_, op, seq);
    stream_.synchronize();
    const at::Tensor host = all.cpu();
    for (int r = 0; r < size(); ++r) {
      const int64_t h = host.data_ptr<int64_t>()[r];
      if (h < 0)
        throw error(Kind::InvalidArgument, op, seq,
                    "invalid arguments on rank " + std::to_string(members_[r]) +
                        (r == rank_ ? ": " + signature.substr(1) : std::string()));
      if (h != hash)
        throw error(Kind::Mismatch, op, seq,
                    "collective mismatch: rank " + std::to_string(global_rank()) + " called " + signature +
                        " but rank " + std::to_string(members_[r]) + " called something else");
    }
  }

  std::shared_ptr<WorldShared> world_;
  std::string name_;
  std::vector<int> members_;
  ncclComm_t comm_ = nullptr;
  c10::cuda::CUDAStream stream_;
  int rank_ = 0;
  uint64_t sequence_ = 0;
  std::string aborted_;
};

}  // namespace

std::shared_ptr<Communicator> connect_nccl_world(c10::intrusive_ptr<c10d::Store> store,
                                                 const NcclWorldOptions& options) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(options.device));
  ncclUniqueId id;
  const std::string key = options.prefix + "/nccl_unique_id";
  if (options.rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) throw std::runtime_error("rank 0: ncclGetUniqueId failed");
    store->set(key, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof id));
  }
  const std::vector<uint8_t> bytes = store->get(key);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, options.world_size, id, options.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress)
    throw std::runtime_error("rank " + std::to_string(options.rank) + ": ncclCommInitRankConfig: " + ncclGetErrorString(r));
  const auto deadline = std::chrono::steady_clock::now() + std::max(options.deadline, std::chrono::milliseconds(30000));
  for (ncclResult_t state = ncclInProgress; state == ncclInProgress;) {
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclSuccess && state != ncclInProgress)
      throw std::runtime_error("rank " + std::to_string(options.rank) + ": NCCL init: " + ncclGetErrorString(state));
    if (state == ncclInProgress && std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(comm);
      throw CollectiveError(Kind::Deadline, "world", options.rank, "init", 0,
                            "rank " + std::to_string(options.rank) + ": NCCL init did not complete (a peer missing?)");
    }
  }
  auto world = std::make_shared<WorldShared>();
  world->store = std::move(store);
  world->options = options;
  std::vector<int> members(static_cast<std::size_t>(options.world_size));
  std::iota(members.begin(), members.end(), 0);
  return std::make_shared<NcclCommunicator>(world, "world", std::move(members), comm);
}

#endif

}  // namespace shardfuzz::comm
