// One scenario on PyTorch FSDP2 through the worker.
#include "harness/backends/torch/torch_backend.h"

#include "harness/files/write_file.h"
#include "harness/files/temp_dir.h"
#include "harness/backends/torch/embedded_python.h"
#include "harness/backends/torch/repro_script.h"
#include "harness/backends/torch/torch_recording.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace shardfuzz::harness::torch_backend {
namespace fs = std::filesystem;

TorchBackend::TorchBackend(const TorchOptions& options) : options_(options), dir_("shardfuzz-torch") {
  work_ = dir_.path();
  write_file_atomically((work_ / "worker.py").string(), kTorchWorkerText);
  worker_ = std::make_unique<TorchWorker>(options_.python, (work_ / "worker.py").string(), (work_ / "worker.log").string());
}

TorchBackend::~TorchBackend() { worker_.reset(); }  // before dir_: the worker's log is in it

std::string TorchBackend::installed_torch_version() {
  nlohmann::json reply;
  try {
    reply = worker_->request({{"op", "version"}, {"id", 0}}, std::chrono::seconds(60));
  } catch (const WorkerFailure& e) {
    throw std::runtime_error("torch backend: the worker did not start: " + std::string(e.what()));
  }
  if (!reply.value("ok", false))
    throw std::runtime_error("torch backend: " + reply.value("error", std::string("no torch version")) +
                             " (python: " + options_.python + ")");
  return reply.at("torch").get<std::string>();
}

RunRecord TorchBackend::run(const Scenario& sc) {
  const std::string script = torch_repro_script(sc);  // validates; invalid_argument for what it cannot express
  const int id = ++runs_;
  const fs::path out = work_ / ("case-" + std::to_string(id));
  fs::create_directories(out);
  write_file_atomically((out / "case.py").string(), script);
  const nlohmann::json request = {{"id", id},
                                  {"script", (out / "case.py").string()},
                                  {"out", out.string()},
                                  {"world", sc.world_size},
                                  {"cpu", options_.cpu},
                                  {"deadline_s", options_.torch_deadline.count()}};
  RunRecord run;
  nlohmann::json reply;
  try {
    // The worker keeps the scenario's deadline itself; this one also covers starting the ranks.
    reply = worker_->request(request, 2 * options_.torch_deadline + std::chrono::seconds(240));
  } catch (const WorkerFailure& e) {
    // A worker that never answered (no such python, torch not importable) is the harness's
    // problem, not a finding.
    if (!answered_) throw std::runtime_error("torch backend: the worker did not start: " + std::string(e.what()));
    run.backend = "torch";
    run.error = e.what();
    run.error_kind = e.kind;
    return run;
  }
  if (reply.value("kind", "") == "start")
    throw std::runtime_error("torch backend: " + reply.value("error", std::string("the worker could not start")) +
                             " (python: " + options_.python + "; worker log:" + worker_->log_tail() + ")");
  answered_ = true;
  torch_version_ = reply.value("torch", torch_version_);
  device_ = reply.value("device", device_);
  if (!reply.value("ok", false)) {
    run.backend = "torch";
    run.error = reply.value("error", std::string("the torch run failed"));
    run.error_kind = reply.value("kind", std::string("exception"));
  } else {
    std::vector<nlohmann::json> docs;
    for (int r = 0; r < sc.world_size; ++r) {
      const fs::path path = out / ("rank-" + std::to_string(r) + ".json");
      std::ifstream in(path);
      if (!in) throw std::runtime_error("torch backend: the worker reported success but wrote no " + path.string());
      docs.push_back(nlohmann::json::parse(in));
    }
    run = run_record_from_recording(docs);
    for (const auto& rank : reply.at("ranks")) run.seconds = std::max(run.seconds, rank.value("seconds", 0.0));
  }
  if (!options_.keep_traces_dir.empty() && fs::exists(out / "trace.json")) {
    fs::create_directories(options_.keep_traces_dir);
    fs::copy_file(out / "trace.json", fs::path(options_.keep_traces_dir) / ((sc.name.empty() ? "case-" + std::to_string(id) : sc.name) + ".json"),
                  fs::copy_options::overwrite_existing);
  }
  remove_tree(out.string());
  return run;
}

}  // namespace shardfuzz::harness::torch_backend
