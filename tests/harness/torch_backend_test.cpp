// The torch backend's two halves that run without torch:
// - the recording: torch 2.11's own recordings (tests/conformance/torch-2.11-generated, written by
//   the prelude on the GPU machine with their LEAK/PASS verdict) read into RunRecords; the
//   harness's property must agree with the verdict torch's state gave, trace for trace;
// - the worker process: a stand-in worker (plain python, no torch) answers, hangs, or dies, and
//   TorchWorker reports each as the harness expects (reply, deadline, crash), restarting after.
// The real worker runs on the GPU machine (docs/torch-backend.md has its figures).
#include "harness/files/json_files.h"
#include "harness/properties/property.h"
#include "harness/scenario/scenario_json.h"
#include "harness/files/temp_dir.h"
#include "harness/backends/torch/torch_recording.h"
#include "harness/backends/torch/torch_worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#ifndef SHARDFUZZ_SOURCE_DIR
#define SHARDFUZZ_SOURCE_DIR "."
#endif

namespace shardfuzz::harness::torch_backend {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A rank document as the worker writes it, from a conformance recording's steps.
nlohmann::json rank_doc_of(const nlohmann::json& trace) {
  nlohmann::json doc = {{"rank", 0}, {"device", trace.value("device", "cpu")}, {"losses", nlohmann::json::array()},
                        {"shards", nlohmann::json::array()}, {"timeline", nlohmann::json::array()}};
  for (const auto& step : trace.at("steps"))
    for (const auto& e : step) doc["timeline"].push_back(e);
  return doc;
}

TEST(TorchRecording, PropertyAgreesWithTorchsOwnVerdictOnEveryRecording) {
  int leak = 0, pass = 0;
  for (const std::string& path : json_files_in(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/conformance/torch-2.11-generated", "recordings")) {
    const nlohmann::json trace = load(path);
    ASSERT_TRUE(trace.contains("verdict")) << path;
    const Scenario sc = scenario_from_json(trace.at("shardfuzz_scenario"));
    const RunRecord run = run_record_from_recording({rank_doc_of(trace)});
    EXPECT_EQ(run.backend, "torch");
    EXPECT_FALSE(run.observed.ledger);
    EXPECT_EQ(run.observed.allocator, trace.at("device") == "cuda") << path;
    const Verdict v = check_per_layer_return_to_baseline(sc, run);
    const bool leaked = trace.at("verdict") == "LEAK";
    EXPECT_EQ(!v.ok, leaked) << path << ": torch said " << trace.at("verdict") << " (" << trace.value("message", "")
                             << "), the property says " << v.message;
    (leaked ? leak : pass) += 1;
  }
  EXPECT_GE(leak, 10);
  EXPECT_GE(pass, 10);
}

TEST(TorchRecording, AllocatedBytesCountFromTheFirstEventAndShardsKeepTheirDtype) {
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "rank": 0, "device": "cuda", "losses": [0.5, 0.25],
    "timeline": [
      {"event": "pre_forward", "group": "root", "step": 0, "pending_all_gather": [], "unsharded": [],
       "finished_backward": [], "pending_all_gather_bytes": {}, "all_reduce_input_bytes": {}, "allocated_bytes": 1000},
      {"event": "step_end", "group": "", "category": "train", "step": 0, "detail": {"loss": 0.5},
       "pending_all_gather": ["layers.0"], "unsharded": [], "finished_backward": [],
       "pending_all_gather_bytes": {"layers.0": 64}, "all_reduce_input_bytes": {}, "allocated_bytes": 1512}],
    "shards": [{"group": "layers.0", "fqn": "layers.0.mlp.w1.weight", "shard_rank": 1, "shard_size": 2,
                "shard_dim": 0, "shape": [4, 8], "dtype": "bfloat16", "padded_bytes": 64,
                "unsharded_bytes": 128, "requires_grad": false}]})");
  const RunRecord run = run_record_from_recording({doc});
  EXPECT_EQ(run.device, "cuda");  // what the differential's per-layer bytes comparison asks
  EXPECT_TRUE(run.observed.allocator);
  ASSERT_EQ(run.ranks.size(), 1u);
  const RankRecord& r = run.ranks[0];
  ASSERT_EQ(r.timeline.size(), 2u);
  EXPECT_EQ(r.timeline[0].allocated_bytes, 0);
  EXPECT_EQ(r.timeline[1].allocated_bytes, 512);
  EXPECT_EQ(r.timeline[1].category, memory::Category::Train);
  EXPECT_EQ(r.timeline[1].pending_all_gather_bytes.at("layers.0"), 64);
  EXPECT_EQ(r.losses, (std::vector<double>{0.5, 0.25}));
  ASSERT_EQ(r.shards.size(), 1u);
  EXPECT_EQ(r.shards[0].local.scalar_type(), c10::ScalarType::BFloat16);
  EXPECT_EQ(r.shards[0].shard_rank, 1);
  EXPECT_FALSE(r.shards[0].requires_grad);
}

TEST(TorchRecording, AMissingFieldIsNamed) {
  try {
    run_record_from_recording({nlohmann::json{{"device", "cpu"}, {"losses", nlohmann::json::array()}}});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rank-0.json: the recording lacks 'timeline'"), std::string::npos) << e.what();
  }
}

TEST(TorchRecording, PropertiesTheTorchBackendCannotObserveAreSkippedSayingWhy) {
  Scenario sc = scenario_from_json(load(std::string(SHARDFUZZ_SOURCE_DIR) +
                                        "/tests/conformance/torch-2.11-generated/export-recompute-refires-forward-prefetch.json")
                                       .at("shardfuzz_scenario"));
  sc.steps = 3;
  RunRecord run;
  run.backend = "torch";
  run.observed = {false, false, false, false};
  run.ranks.resize(1);
  for (const auto& v : check_properties(sc, run)) {
    if (v.property == "teardown_to_baseline" || v.property == "peak_within_bound" ||
        v.property == "parity_with_reference" || v.property == "flat_end_of_step_memory") {
      EXPECT_TRUE(v.skipped) << v.property;
      EXPECT_NE(v.message.find("torch backend"), std::string::npos) << v.message;
    }
  }
}

// --- the worker process ------------------------------------------------------------------------

bool have_python() { return std::system("python3 -c 'import json' >/dev/null 2>&1") == 0; }

class StandInWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_python()) GTEST_SKIP() << "no python3";
    tmp_ = std::make_unique<TempDir>("shardfuzz-worker-test");
    dir_ = tmp_->path();
    // Answers {"echo": id}; "hang" sleeps forever; "die" exits with code 3; "garble" prints non-JSON.
    std::ofstream(dir_ / "worker.py") << R"(import json, sys, time
for line in sys.stdin:
    r = json.loads(line)
    if r.get("op") == "quit": break
    if r.get("do") == "hang": time.sleep(3600)
    if r.get("do") == "die": print("dying on purpose", file=sys.stderr, flush=True); sys.exit(3)
    if r.get("do") == "garble": print("not json", flush=True); continue
    print(json.dumps({"echo": r["id"]}), flush=True)
)";
  }
  std::unique_ptr<TempDir> tmp_;
  fs::path dir_;
};

// The WorkerFailure a request ends in (its kind and message), or kind "none".
WorkerFailure failure_of(TorchWorker& w, const nlohmann::json& request, std::chrono::milliseconds timeout) {
  try {
    w.request(request, timeout);
  } catch (const WorkerFailure& e) {
    return e;
  }
  return WorkerFailure("none", "the request succeeded");
}

bool says(const WorkerFailure& f, const std::string& text) { return std::string(f.what()).find(text) != std::string::npos; }

TEST_F(StandInWorker, AnswersOneLinePerRequest) {
  TorchWorker w("python3", (dir_ / "worker.py").string(), (dir_ / "worker.log").string());
  for (int id = 1; id <= 3; ++id) EXPECT_EQ(w.request({{"id", id}}, 20s).at("echo"), id);
  EXPECT_TRUE(w.running());
}

TEST_F(StandInWorker, AHangIsADeadlineAndTheNextRequestStartsAFreshWorker) {
  TorchWorker w("python3", (dir_ / "worker.py").string(), (dir_ / "worker.log").string());
  const auto t0 = std::chrono::steady_clock::now();
  const WorkerFailure f = failure_of(w, {{"id", 1}, {"do", "hang"}}, 1500ms);
  EXPECT_EQ(f.kind, "deadline");
  EXPECT_TRUE(says(f, "no answer within 1 s")) << f.what();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_FALSE(w.running());
  EXPECT_EQ(w.request({{"id", 2}}, 20s).at("echo"), 2);
}

TEST_F(StandInWorker, ADeathIsACrashWithItsExitCodeAndLog) {
  TorchWorker w("python3", (dir_ / "worker.py").string(), (dir_ / "worker.log").string());
  const WorkerFailure f = failure_of(w, {{"id", 1}, {"do", "die"}}, 20s);
  EXPECT_EQ(f.kind, "crash");
  EXPECT_TRUE(says(f, "exited with code 3")) << f.what();
  EXPECT_TRUE(says(f, "dying on purpose")) << f.what();
  EXPECT_EQ(w.request({{"id", 2}}, 20s).at("echo"), 2);
}

TEST_F(StandInWorker, AnAnswerThatIsNotJsonIsACrash) {
  TorchWorker w("python3", (dir_ / "worker.py").string(), (dir_ / "worker.log").string());
  const WorkerFailure f = failure_of(w, {{"id", 1}, {"do", "garble"}}, 20s);
  EXPECT_EQ(f.kind, "crash");
  EXPECT_TRUE(says(f, "not JSON")) << f.what();
}

TEST_F(StandInWorker, AMissingInterpreterIsNamed) {
  TorchWorker w("/nonexistent/python", (dir_ / "worker.py").string(), (dir_ / "worker.log").string());
  const WorkerFailure f = failure_of(w, {{"id", 1}}, 20s);
  EXPECT_EQ(f.kind, "crash");
  EXPECT_TRUE(says(f, "cannot execute /nonexistent/python")) << f.what();
}

}  // namespace
}  // namespace shardfuzz::harness::torch_backend
