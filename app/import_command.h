// `shardfuzz import --hf config.json [--torchtitan job.toml] [flags]`: a production model and its
// training recipe, read into the FSDP plan torchtitan would build (docs/production-oom.md).
#pragma once

#include <CLI/App.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::app {

struct ImportOptions {
  std::string hf_config;   // a Hugging Face config.json
  std::string torchtitan;  // a torchtitan job TOML ("": the flags and defaults alone)
  int world = 0;           // 0: the job's, else 1
  int dp_replicate = 0;    // 0: the job's
  int ep = 0;
  std::string reshard_after_forward;
  std::string ac;
  std::string storage_dtype;  // what the sharded parameters are held in (torchtitan: float32)
  int64_t local_batch_size = 0;
  int64_t seq_len = 0;
  int lora_rank = 0;
  std::vector<std::string> lora_targets;
  bool json = false;
  bool project = false;        // run the imported scenario and price its schedule
  std::string widths = "real"; // "real": the model's widths (shape-only when a data run cannot hold them); "small"
  bool shape_only = false;     // force a shape-only run at the real widths
  double routing_skew = 0.0;   // shape-only: tokens per expert follow 1/(e+1)^skew (0: balanced)
  std::string profile = "torch-2.11";
  std::string device_memory;   // "80GiB": name the layer that runs out of it
  std::string scenario_out;    // write the imported scenario here (for shrink, run, export)
  std::string html;            // with --project: the projection's HTML report
};

CLI::App* add_import_command(CLI::App& app, ImportOptions& options);
int run_import(const ImportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
