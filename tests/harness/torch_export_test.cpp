// The torch export (harness/backends/torch/repro_script.h): every reproducer becomes a Python program that
// compiles, names its modules as the scenario does, carries the scenario back, and — for the seed
// reproducer — emits exactly the reviewed scenario section (tests/harness/golden/). Real runs on
// torch 2.11 happen on the GPU machine; their recordings are replayed by the conform_torch_generated
// ctest (tests/conformance/torch-2.11-generated).
#include "harness/files/json_files.h"
#include "harness/reproducer.h"
#include "harness/scenario/scenario_json.h"
#include "harness/backends/torch/repro_script.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef SHARDFUZZ_SOURCE_DIR
#define SHARDFUZZ_SOURCE_DIR "."
#endif

namespace shardfuzz::harness {
namespace {

const std::string kSource = SHARDFUZZ_SOURCE_DIR;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The reviewed part of a script is its code: the SCENARIO_JSON line is the scenario as data (it
// grows with every scenario field), checked on its own by TheScriptCarriesTheScenarioBack.
std::string without_scenario_json(const std::string& script) {
  std::istringstream in(script);
  std::string out, line;
  while (std::getline(in, line))
    if (line.rfind("SCENARIO_JSON = ", 0) != 0) out += line + "\n";
  return out;
}

bool have_python() { return std::system("python3 -c 'import ast' >/dev/null 2>&1") == 0; }

TEST(TorchExport, EveryReproducerExportsToAProgramThatCompiles) {
  const bool python = have_python();
  int exported = 0;
  for (const std::string& path : json_files_in(kSource + "/reproducers", "reproducers")) {
    const Reproducer r = load_reproducer(path);
    const std::string script = torch_repro_script(r.scenario, "Found by: " + r.found_by);
    ++exported;
    EXPECT_NE(script.find("fully_shard(model, mesh=dp_mesh"), std::string::npos) << path;
    EXPECT_NE(script.find("main(build, PLAN)"), std::string::npos) << path;
    if (!python) continue;
    const auto file = std::filesystem::temp_directory_path() / ("shardfuzz-export-" + r.name + ".py");
    std::ofstream(file) << script;
    EXPECT_EQ(std::system(("python3 -m py_compile '" + file.string() + "'").c_str()), 0) << path;
    std::filesystem::remove(file);
  }
  EXPECT_GE(exported, 15);
  if (!python) GTEST_SKIP() << "python3 not found: exported, not compiled";
}

TEST(TorchExport, SeedReproducerEmitsTheReviewedScenarioSection) {
  const Reproducer r = load_reproducer(kSource + "/reproducers/seed-leak-gated-moe-nested-experts-ac.json");
  const std::string script = torch_repro_script(r.scenario);
  const std::string section = script.substr(script.find("# --- this scenario"));
  EXPECT_EQ(without_scenario_json(section),
            without_scenario_json(read(kSource + "/tests/harness/golden/seed-leak-gated-moe-nested-experts-ac.torch.py")))
      << "regenerate with: shardfuzz export --torch reproducers/seed-leak-gated-moe-nested-experts-ac.json | "
         "sed -n '/^# --- this scenario/,$p' — after reviewing the difference";
  // The pre-fix emulation is announced in the docstring under torch-2.9 and absent under 2.11.
  const std::string announced = ": FSDPParamGroup.post_forward is recompiled";
  EXPECT_NE(script.find("Profile torch-2.9" + announced), std::string::npos);
  Scenario as_shipped = r.scenario;
  as_shipped.profile = semantics::Profile::named("torch-2.11");
  EXPECT_EQ(torch_repro_script(as_shipped).find(announced), std::string::npos);
}

TEST(TorchExport, TheScriptCarriesTheScenarioBack) {
  const Reproducer r = load_reproducer(kSource + "/reproducers/zoo-7-per_layer_return_to_baseline-torch-2.11-125534.json");
  const std::string script = torch_repro_script(r.scenario);
  const std::string key = "SCENARIO_JSON = \"";
  const std::size_t at = script.find(key);
  ASSERT_NE(at, std::string::npos);
  std::string quoted = script.substr(at + key.size());
  quoted = quoted.substr(0, quoted.find("\"\n"));
  std::string text;
  for (std::size_t i = 0; i < quoted.size(); ++i) text += quoted[i] == '\\' ? quoted[++i] : quoted[i];
  EXPECT_EQ(to_json(scenario_from_json(nlohmann::json::parse(text))), to_json(r.scenario));
  // Mixed precision and the HSDP experts mesh are spelled out.
  EXPECT_NE(script.find("MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=None)"), std::string::npos);
  EXPECT_NE(script.find("experts_mesh = init_device_mesh(device, (world // 1, 1)"), std::string::npos);
}

TEST(TorchExport, ModulePathsBecomePythonExpressions) {
  EXPECT_EQ(python_module_expr(""), "model");
  EXPECT_EQ(python_module_expr("out"), "model.out");
  EXPECT_EQ(python_module_expr("layers"), "model.layers");
  EXPECT_EQ(python_module_expr("layers.12.moe.experts"), "model.layers[12].moe.experts");
  EXPECT_EQ(python_module_expr("layers.0.attn.q"), "model.layers[0].attn.q");
}

TEST(TorchExport, ExpertParallelSplitsTheExpertsOverEpAndShardsThemOverDpModEp) {
  const Reproducer r = load_reproducer(kSource + "/reproducers/zoo-4-liveness-strict_experts_skip_empty-860391.json");
  ASSERT_TRUE(r.scenario.expert_parallel);
  const std::string script = torch_repro_script(r.scenario);
  EXPECT_NE(script.find("experts_mesh = hsdp_mesh[\"dp_mod_ep\"]"), std::string::npos);
  EXPECT_NE(script.find("ep_group = hsdp_mesh[\"ep\"].get_group()"), std::string::npos);
  EXPECT_NE(script.find("ep=ep_group)"), std::string::npos);
  // The prelude's routed MoE dispatches with the autograd all-to-all between the experts' hooks.
  EXPECT_NE(script.find("all_to_all_single_autograd(routed, recv_splits, send_splits, self.ep)"), std::string::npos);
}

}  // namespace
}  // namespace shardfuzz::harness
