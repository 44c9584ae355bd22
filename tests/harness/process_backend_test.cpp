// The process backend end to end: rank processes of the real shardfuzz binary (SHARDFUZZ_BINARY),
// their StoreWorld, the records they send back and how a rank that dies is reported.
#include "fault_test_support.h"
#include "harness/backends/backend.h"
#include "harness/backends/process/process_backend.h"
#include "harness/properties/property.h"
#include "harness/reproducer.h"
#include "harness/run/run_record_json.h"
#include "harness/files/temp_dir.h"
#include "harness/backends/threads/threads_backend.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

extern char** environ;

namespace shardfuzz::harness {
namespace {

std::unique_ptr<Backend> process_backend(int nproc = 0, std::chrono::milliseconds deadline = std::chrono::seconds(3)) {
  process::ProcessOptions o;
  o.worker = SHARDFUZZ_BINARY;
  o.nproc = nproc;
  o.run.deadline = deadline;
  return process::make_process_backend(o);
}

// The timeline without its clock: everything the properties read.
nlohmann::json without_times(const RankRecord& r) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : r.timeline) {
    nlohmann::json j = e.to_json();
    j.erase("at_ns");
    events.push_back(j);
  }
  return events;
}

TEST(ProcessBackend, TheSeedLeakRunsEventForEventAsOnThreads) {
  const Scenario sc =
      load_scenario_or_reproducer(std::string(SHARDFUZZ_SOURCE_DIR) + "/reproducers/seed-leak-gated-moe-nested-experts-ac.json");
  const RunRecord threads = run_threads(sc);
  const RunRecord processes = process_backend()->run(sc);
  ASSERT_TRUE(processes.ok()) << processes.error;
  EXPECT_EQ(processes.backend, "process");
  ASSERT_EQ(processes.ranks.size(), threads.ranks.size());
  for (std::size_t r = 0; r < threads.ranks.size(); ++r) {
    EXPECT_EQ(without_times(processes.ranks[r]), without_times(threads.ranks[r])) << "rank " << r;
    EXPECT_EQ(processes.ranks[r].losses, threads.ranks[r].losses) << "rank " << r;
    EXPECT_EQ(processes.ranks[r].teardown_bytes - processes.ranks[r].baseline_bytes,
              threads.ranks[r].teardown_bytes - threads.ranks[r].baseline_bytes);
  }
  // The same verdicts, the leak included.
  const auto a = check_properties(sc, threads), b = check_properties(sc, processes);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::make_pair(a[i].ok, a[i].skipped), std::make_pair(b[i].ok, b[i].skipped)) << a[i].property;
  EXPECT_EQ(first_failure(b)->property, "per_layer_return_to_baseline");
}

TEST(ProcessBackend, ThePoolServesScenariosOfChangingWorldSizes) {
  auto backend = process_backend();
  for (int world : {2, 1, 3, 3}) {
    const RunRecord run = backend->run(testing_support::small(world));
    ASSERT_TRUE(run.ok()) << "world " << world << ": " << run.error;
    EXPECT_EQ(run.ranks.size(), static_cast<std::size_t>(world));
    for (const auto& v : check_properties(testing_support::small(world), run))
      EXPECT_TRUE(v.ok) << "world " << world << ": " << v.property << ": " << v.message;
  }
}

TEST(ProcessBackend, ARankProcessThatDiesIsReportedNotWaitedFor) {
  auto backend = process_backend(3, std::chrono::seconds(30));
  const Scenario sc = testing_support::with_fault(testing_support::small(3), "abort", 1, 2);
  const auto t0 = std::chrono::steady_clock::now();
  const RunRecord run = backend->run(sc);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "the launcher waited for the dead rank";
  EXPECT_EQ(run.error_kind, "process_died");
  EXPECT_NE(run.error.find("rank 1: process died: signal 6"), std::string::npos) << run.error;
  // The launcher told the survivors at once; each caught it naming rank 1, as planned.
  const auto verdicts = check_properties(sc, run);
  EXPECT_TRUE(testing_support::verdict(verdicts, "liveness").ok) << testing_support::verdict(verdicts, "liveness").message;
  EXPECT_TRUE(testing_support::verdict(verdicts, "faults_detected").ok)
      << testing_support::verdict(verdicts, "faults_detected").message;
  // The pool was replaced: the next scenario runs.
  const RunRecord next = backend->run(testing_support::small(3));
  EXPECT_TRUE(next.ok()) << next.error;
}

TEST(ProcessBackend, RecoversFromAnExceptionLikeTheThreadsBackend) {
  const Scenario sc = testing_support::with_exception(testing_support::small(2), 0, "layers.0", "backward", 0);
  const RunRecord run = process_backend()->run(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  ASSERT_TRUE(run.recovery);
  for (const auto& r : run.ranks) EXPECT_EQ(r.recoveries.size(), 1u) << "rank " << r.rank;
  const auto verdicts = check_properties(sc, run);
  EXPECT_TRUE(testing_support::verdict(verdicts, "faults_detected").ok) << testing_support::verdict(verdicts, "faults_detected").message;
  EXPECT_TRUE(testing_support::verdict(verdicts, "recovers_after_fault").ok) << testing_support::verdict(verdicts, "recovers_after_fault").message;
  EXPECT_TRUE(testing_support::verdict(verdicts, "parity_with_reference").ok) << testing_support::verdict(verdicts, "parity_with_reference").message;
}

TEST(ProcessBackend, RefusesWhatItCannotRunNamingTheField) {
  try {
    process_backend(2)->run(testing_support::small(3));
    FAIL() << "world 3 ran on --nproc 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("world_size: 3 differs from --nproc 2"), std::string::npos) << e.what();
  }
  process::ProcessOptions o;
  o.run.device = "gpu";
  EXPECT_THROW(process::make_process_backend(o), std::invalid_argument);
}

TEST(RunRecordJson, ARankRecordRoundTripsWithNonFiniteLossesAndExactShards) {
  const RunRecord run = run_threads(testing_support::with_exception(testing_support::small(2), 1, "layers.0", "forward", 0));
  RankRecord r = run.ranks[1];
  r.losses.push_back(std::numeric_limits<double>::quiet_NaN());
  r.losses.push_back(-std::numeric_limits<double>::infinity());
  ASSERT_FALSE(r.recoveries.empty());
  const RankRecord back = rank_record_from_json(nlohmann::json::parse(to_json(r).dump()));
  EXPECT_EQ(to_json(back).dump(), to_json(r).dump());
  EXPECT_TRUE(std::isnan(back.losses[back.losses.size() - 2]));
  ASSERT_EQ(back.shards.size(), r.shards.size());
  for (std::size_t i = 0; i < r.shards.size(); ++i) {
    EXPECT_TRUE(at::equal(back.shards[i].local, r.shards[i].local)) << r.shards[i].fqn;
    EXPECT_EQ(back.shards[i].local.scalar_type(), r.shards[i].local.scalar_type());
  }
  try {
    rank_record_from_json(nlohmann::json{{"rank", 0}, {"timeline", "x"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("timeline"), std::string::npos) << e.what();
  }
}

// A TCP port nobody listens on now, below the kernel's ephemeral range (32768 and up), so that no
// store another test serves on port 0 can take it between this pick and rank 0's bind.
int free_port() {
  static std::atomic<int> next{20000 + static_cast<int>(getpid() % 6000)};
  for (int tries = 0; tries < 2000; ++tries) {
    const int port = 20000 + (next++ - 20000) % 12000;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (free) return port;
  }
  ADD_FAILURE() << "no free port in 20000-31999";
  return 0;
}

// What a launcher (torchrun, srun) does: start the same command once per rank with its
// environment; returns each rank's exit code and output (stdout and stderr), killing what is still
// running after `limit`.
struct Launched {
  std::vector<int> exit_codes;
  std::vector<std::string> outputs;
};
Launched launch(int world, const std::vector<std::string>& args, const std::string& folder,
                std::chrono::seconds limit = std::chrono::seconds(120), bool with_rank_env = true) {
  const int port = free_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e, name = kv.substr(0, kv.find('='));
      if (name != "RANK" && name != "WORLD_SIZE" && name != "LOCAL_RANK" && name != "MASTER_ADDR" && name != "MASTER_PORT")
        env.push_back(kv);
    }
    if (with_rank_env)
      for (const std::string& kv : {"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
                                    "WORLD_SIZE=" + std::to_string(world), std::string("MASTER_ADDR=127.0.0.1"),
                                    "MASTER_PORT=" + std::to_string(port)})
        env.push_back(kv);
    std::vector<std::string> argv_text{SHARDFUZZ_BINARY};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& kv : env) envp.push_back(kv.data());
    envp.push_back(nullptr);
    const std::string out = folder + "/rank-" + std::to_string(r) + ".out";
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  Launched l;
  const auto until = std::chrono::steady_clock::now() + limit;
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ADD_FAILURE() << "a rank of the launch was still running after " << limit.count() << " s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    l.exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  for (int r = 0; r < world; ++r) {
    std::ifstream in(folder + "/rank-" + std::to_string(r) + ".out");
    std::stringstream text;
    text << in.rdbuf();
    l.outputs.push_back(text.str());
  }
  return l;
}

// torchrun's way, started here by hand: every rank runs `shardfuzz run --backend process --join`
// on the seed reproducer (world 4). Rank 0 serves the store, runs the case as launcher and as a
// rank, and reports the leak; the others serve their rank and exit 0 when rank 0 ends the launch.
TEST(JoinedLaunch, EveryRankRunsTheSameCommandAndRankZeroReports) {
  TempDir dir("shardfuzz-join");
  const std::string seed = std::string(SHARDFUZZ_SOURCE_DIR) + "/reproducers/seed-leak-gated-moe-nested-experts-ac.json";
  const Launched l = launch(4, {"run", "--backend", "process", "--join", seed}, dir.path());
  ASSERT_EQ(l.exit_codes.size(), 4u);
  EXPECT_EQ(l.exit_codes[0], 1) << l.outputs[0];  // the finding
  EXPECT_NE(l.outputs[0].find("per_layer_return_to_baseline"), std::string::npos) << l.outputs[0];
  for (int r = 1; r < 4; ++r) EXPECT_EQ(l.exit_codes[static_cast<std::size_t>(r)], 0) << "rank " << r << ": " << l.outputs[static_cast<std::size_t>(r)];
}

TEST(JoinedLaunch, AFuzzCampaignRunsOnTheLaunchsWorld) {
  TempDir dir("shardfuzz-join-fuzz");
  const Launched l = launch(2, {"fuzz", "--backend", "process", "--join", "--profile", "strict", "--cases", "3",
                                "--out", dir.path() + "/findings"},
                            dir.path());
  ASSERT_EQ(l.exit_codes.size(), 2u);
  EXPECT_EQ(l.exit_codes[0], 0) << l.outputs[0];
  EXPECT_NE(l.outputs[0].find("3 cases"), std::string::npos) << l.outputs[0];
  EXPECT_EQ(l.exit_codes[1], 0) << l.outputs[1];
}

TEST(JoinedLaunch, WithoutTheLaunchsEnvironmentTheErrorNamesTheVariable) {
  TempDir dir("shardfuzz-join-env");
  const std::string seed = std::string(SHARDFUZZ_SOURCE_DIR) + "/reproducers/seed-leak-gated-moe-nested-experts-ac.json";
  const Launched l = launch(1, {"run", "--backend", "process", "--join", seed}, dir.path(), std::chrono::seconds(30),
                            /*with_rank_env=*/false);
  EXPECT_EQ(l.exit_codes[0], 2);
  EXPECT_NE(l.outputs[0].find("WORLD_SIZE: not set"), std::string::npos) << l.outputs[0];
  const Launched threads = launch(1, {"run", "--join", seed}, dir.path(), std::chrono::seconds(30));
  EXPECT_EQ(threads.exit_codes[0], 2);
  EXPECT_NE(threads.outputs[0].find("--join: only with --backend process or nccl"), std::string::npos)
      << threads.outputs[0];
}

}  // namespace
}  // namespace shardfuzz::harness
