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
  int lora_rank = 0;
  std::vector<std::string> lora_targets;
  bool json = false;
};

CLI::App* add_import_command(CLI::App& app, ImportOptions& options);
int run_import(const ImportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
