// Scenario JSON: exact round trips of hand-made scenarios, defaults for missing keys, and the
// reader's rejections (unknown and duplicate keys, wrong types, integer ranges, syntax errors with
// their byte offset, nesting, size, unreadable files), each naming the JSON path.
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>

namespace shardfuzz::harness {
namespace {

using nlohmann::json;

Scenario with_root(Scenario s) {
  s.fully_shard[""];
  return s;
}

// The documented example (docs/scenario-format.md).
Scenario example() {
  Scenario s;
  s.name = "two-moe-blocks";
  s.seed = 7;
  s.world_size = 4;
  s.expert_shard_size = 2;
  s.profile = semantics::Profile::named("torch-2.9");
  BlockSpec b;
  b.kind = BlockSpec::Kind::Moe;
  b.gated = true;
  b.ac = ac::CheckpointMode::NonReentrant;
  s.blocks = {b, b};
  s.fully_shard[""];
  s.fully_shard["layers.0.moe.experts"].mesh = "experts";
  s.fully_shard["layers.1.moe.experts"].mesh = "experts";
  s.fully_shard["layers.0"].forward_prefetch = std::vector<std::string>{"layers.1"};
  s.fully_shard["layers.0"].backward_prefetch = std::vector<std::string>{};
  s.fully_shard["layers.1"].forward_prefetch = std::vector<std::string>{"out"};
  s.fully_shard["layers.1"].backward_prefetch = std::vector<std::string>{"layers.0"};
  s.fully_shard["out"].reshard_after_forward = fsdp::ReshardAfterForward::no();
  s.fully_shard["out"].backward_prefetch = std::vector<std::string>{"layers.1"};
  return s;
}

// Every field away from its default.
Scenario everything_set() {
  Scenario s;
  s.name = "quote \" backslash \\ tab \t unicode \xc3\xa9\xe2\x82\xac";
  s.seed = std::numeric_limits<uint64_t>::max();
  s.world_size = 8;
  s.expert_shard_size = 4;
  s.profile = semantics::Profile::named("strict");
  s.steps = 1000;
  s.dims = {32, 12, 3, 5};
  s.loss = "sum";
  s.optimizer.kind = train::OptimizerConfig::Kind::AdamW;
  s.optimizer.lr = 0.1 + 0.2;  // not a short decimal: the text must keep every bit
  s.optimizer.beta1 = 0;
  s.optimizer.beta2 = 0.95;
  s.optimizer.eps = 1e-300;
  s.optimizer.weight_decay = 0.01;
  s.input_requires_grad = false;
  s.input_per_rank = false;
  s.dtype = "bfloat16";
  s.mixed_precision = MixedPrecisionSpec{"float32", std::nullopt, true};
  BlockSpec mlp;
  mlp.kind = BlockSpec::Kind::Mlp;
  mlp.gated = false;
  mlp.ac = ac::CheckpointMode::Reentrant;
  mlp.frozen = true;
  BlockSpec moe;
  moe.gated = false;
  s.blocks = {mlp, moe, mlp};
  using R = fsdp::ReshardAfterForward;
  s.fully_shard[""].reshard_after_forward = R::yes();
  s.fully_shard["layers"].reshard_after_forward = R::no();
  s.fully_shard["layers.0.mlp.fc2"].reshard_after_forward = R::ranks(2);
  s.fully_shard["layers.1.moe.experts"].mesh = "experts";
  s.fully_shard["layers.1.moe.experts"].shard_dim = 1;
  s.fully_shard["layers.1.moe.experts"].forward_prefetch = std::vector<std::string>{"self", "layers.0.mlp.fc2", ""};
  s.fully_shard["layers.2"].reshard_after_forward = R::ranks(8);
  return s;
}

void expect_round_trip(const Scenario& s) {
  ASSERT_NO_THROW(s.validate());
  const json j = to_json(s);
  EXPECT_EQ(to_json(scenario_from_json(j)), j);
  const std::string text = to_json_text(s);
  EXPECT_EQ(text.rfind("{\n  \"schema\": 1,\n", 0), 0u) << text;
  EXPECT_EQ(text.back(), '}');
  const Scenario back = parse_scenario(text);
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(to_json_text(back), text);
}

// Parses `text` and expects a rejection whose message starts with `prefix`.
void expect_rejected(const std::string& text, const std::string& prefix) {
  try {
    parse_scenario(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << "message: " << e.what() << "\nexpected prefix: " << prefix;
  }
}

// A minimal valid scenario text with `members` spliced in at the top level.
std::string minimal(const std::string& members = "") {
  return R"({"schema": 1, "fully_shard": {"": {}})" + std::string(members.empty() ? "" : ", ") + members + "}";
}

TEST(ScenarioJson, RoundTripsHandMadeScenariosExactly) {
  expect_round_trip(with_root(Scenario{}));
  expect_round_trip(example());
  expect_round_trip(everything_set());
  Scenario zero_blocks = with_root(Scenario{});
  zero_blocks.world_size = 1;
  zero_blocks.fully_shard["out"].backward_prefetch = std::vector<std::string>{};
  expect_round_trip(zero_blocks);
}

TEST(ScenarioJson, TextListsFieldsInDeclarationOrder) {
  const std::string text = to_json_text(example());
  std::size_t at = 0;
  for (const char* key : {"\"schema\"", "\"name\"", "\"seed\"", "\"world_size\"", "\"expert_shard_size\"", "\"profile\"",
                          "\"steps\"", "\"dims\"", "\"dtype\"", "\"loss\"", "\"optimizer\"", "\"input_requires_grad\"",
                          "\"input_per_rank\"", "\"blocks\"", "\"fully_shard\""}) {
    const std::size_t found = text.find(key, at);
    ASSERT_NE(found, std::string::npos) << key;
    at = found;
  }
  // Absent lists stay absent; empty lists stay empty.
  const json j = to_json(example());
  EXPECT_FALSE(j["fully_shard"][""].contains("forward_prefetch"));
  EXPECT_EQ(j["fully_shard"]["layers.0"]["backward_prefetch"], json::array());
  EXPECT_EQ(j["fully_shard"]["out"]["reshard_after_forward"], false);
  EXPECT_EQ(j["fully_shard"][""]["reshard_after_forward"], "auto");
  EXPECT_EQ(to_json(everything_set())["fully_shard"]["layers.2"]["reshard_after_forward"], 8);
}

TEST(ScenarioJson, MissingOptionalKeysTakeTheStructDefaults) {
  const Scenario s = parse_scenario(minimal());
  EXPECT_EQ(to_json(s), to_json(with_root(Scenario{})));
  const Scenario t = parse_scenario(R"({"schema": 1, "blocks": [{}, {"kind": "mlp"}], "fully_shard": {"": {}, "layers.1": {"mesh": "experts"}}})");
  ASSERT_EQ(t.blocks.size(), 2u);
  EXPECT_EQ(t.blocks[0].kind, BlockSpec::Kind::Moe);
  EXPECT_TRUE(t.blocks[0].gated);
  EXPECT_EQ(t.blocks[1].kind, BlockSpec::Kind::Mlp);
  EXPECT_EQ(t.fully_shard.at("layers.1").reshard_after_forward.kind, fsdp::ReshardAfterForward::Kind::Auto);
  EXPECT_FALSE(t.fully_shard.at("layers.1").forward_prefetch.has_value());
}

TEST(ScenarioJson, MixedPrecisionIsOptionalAndAbsentReduceDtypeMeansParamDtype) {
  EXPECT_FALSE(to_json(parse_scenario(minimal())).contains("mixed_precision"));
  const Scenario s = parse_scenario(minimal(R"("dtype": "bfloat16", "mixed_precision": {"param_dtype": "bfloat16"})"));
  ASSERT_TRUE(s.mixed_precision.has_value());
  EXPECT_FALSE(s.mixed_precision->reduce_dtype.has_value());
  EXPECT_FALSE(s.mixed_precision->upcast_trainable);
  EXPECT_FALSE(s.mp_policy().reduce_dtype.has_value());
  EXPECT_EQ(*s.mp_policy().param_dtype, at::kBFloat16);
  EXPECT_FALSE(to_json(s)["mixed_precision"].contains("reduce_dtype"));
  expect_round_trip(with_root(s));
}

TEST(ScenarioJson, SchemaIsRequiredAndCheckedFirst) {
  expect_rejected(R"({"world_size": 2})", "schema: missing");
  expect_rejected(R"({"schema": 2, "new_key": 1})", "schema: 2 is not supported");
  expect_rejected(R"({"schema": "1"})", "schema: expected an integer, got the string \"1\"");
  expect_rejected(R"([1, 2])", "scenario: expected an object, got an array of 2");
  expect_rejected(R"(null)", "scenario: expected an object, got null");
}

TEST(ScenarioJson, UnknownKeysAreRejectedByPath) {
  expect_rejected(minimal(R"("wrld_size": 2)"), "wrld_size: unknown key");
  expect_rejected(minimal(R"("dims": {"dm": 2})"), "dims.dm: unknown key");
  expect_rejected(minimal(R"("optimizer": {"lrr": 2})"), "optimizer.lrr: unknown key");
  expect_rejected(minimal(R"("mixed_precision": {"param": "bfloat16"})"), "mixed_precision.param: unknown key");
  expect_rejected(minimal(R"("blocks": [{}, {"gatd": true}])"), "blocks[1].gatd: unknown key");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": {"meshh": "dp"}}})", "fully_shard[\"\"].meshh: unknown key");
  expect_rejected(minimal(R"("a b": 1)"), "[\"a b\"]: unknown key");
}

TEST(ScenarioJson, WrongTypesNameThePathAndTheExpectedType) {
  expect_rejected(minimal(R"("world_size": "2")"), "world_size: expected an integer, got the string \"2\"");
  expect_rejected(minimal(R"("world_size": 2.5)"), "world_size: expected an integer, got the number 2.5");
  expect_rejected(minimal(R"("world_size": 2.0)"), "world_size: expected an integer");
  expect_rejected(minimal(R"("world_size": true)"), "world_size: expected an integer, got true");
  expect_rejected(minimal(R"("name": 3)"), "name: expected a string, got the number 3");
  expect_rejected(minimal(R"("input_per_rank": 1)"), "input_per_rank: expected true or false");
  expect_rejected(minimal(R"("dims": [16])"), "dims: expected an object, got an array of 1");
  expect_rejected(minimal(R"("optimizer": {"lr": "fast"})"), "optimizer.lr: expected a number");
  expect_rejected(minimal(R"("optimizer": {"kind": "adam"})"), "optimizer.kind: \"adam\" is not an optimizer (sgd, adamw)");
  expect_rejected(minimal(R"("blocks": {})"), "blocks: expected an array of blocks, got an object");
  expect_rejected(minimal(R"("blocks": [{}, 3])"), "blocks[1]: expected an object, got the number 3");
  expect_rejected(minimal(R"("blocks": [{"kind": "dense"}])"), "blocks[0].kind: \"dense\" is not a block kind (moe, routed_moe, mlp)");
  expect_rejected(minimal(R"("blocks": [{"ac": "full"}])"), "blocks[0].ac: \"full\" is not a checkpoint mode");
  expect_rejected(minimal(R"("blocks": [{"lora": ["attn", 3]}])"), "blocks[0].lora[1]: expected a string, got the number 3");
  expect_rejected(minimal(R"("blocks": [{"lora": ["attn.q"]}])"), "blocks[0].lora[0]: \"attn.q\" is no linear of this block");
  expect_rejected(minimal(R"("blocks": [{"ac": "sometimes"}])"), "blocks[0].ac: \"sometimes\" is not a checkpoint mode");
  expect_rejected(minimal(R"("micro_batches": "2")"), "micro_batches: expected an integer, got the string \"2\"");
  expect_rejected(R"({"schema": 1, "fully_shard": []})", "fully_shard: expected an object");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": 1}})", "fully_shard[\"\"]: expected an object, got the number 1");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": {"reshard_after_forward": "yes"}}})",
                  "fully_shard[\"\"].reshard_after_forward: \"yes\" is not a reshard_after_forward value");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": {"reshard_after_forward": 2.0}}})",
                  "fully_shard[\"\"].reshard_after_forward: expected \"auto\", true, false or an integer, got the number 2.0");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": {"forward_prefetch": null}}})",
                  "fully_shard[\"\"].forward_prefetch: expected an array of strings, got null");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": {"backward_prefetch": ["self", ["out"]]}}})",
                  "fully_shard[\"\"].backward_prefetch[1]: expected a string, got an array of 1");
}

TEST(ScenarioJson, IntegersKeepTheirRangeAndSeedsAreUnsigned64) {
  expect_rejected(minimal(R"("world_size": 4294967296)"), "world_size: 4294967296 is out of range for a 32-bit integer");
  expect_rejected(minimal(R"("world_size": 9223372036854775808)"),
                  "world_size: 9223372036854775808 is out of range for a signed 64-bit integer");
  expect_rejected(minimal(R"("world_size": -1)"), "world_size: -1 outside [1, 64]");
  expect_rejected(minimal(R"("world_size": 1e308)"), "world_size: expected an integer, got the number 1e+308");
  expect_rejected(minimal(R"("dims": {"dim": 1e400})"), "scenario: invalid JSON at byte 60: number overflow");
  expect_rejected(minimal(R"("dims": {"dim": 9223372036854775807})"), "dims.dim: 9223372036854775807 outside [1, 65536]");
  expect_rejected(minimal(R"("seed": -1)"), "seed: -1 is negative (expected an unsigned 64-bit integer)");
  expect_rejected(minimal(R"("seed": 18446744073709551616)"), "seed: expected an unsigned 64-bit integer");
  expect_rejected(minimal(R"("seed": 1.5)"), "seed: expected an unsigned 64-bit integer");
  EXPECT_EQ(parse_scenario(minimal(R"("seed": 18446744073709551615)")).seed, std::numeric_limits<uint64_t>::max());
  expect_rejected(minimal(R"("optimizer": {"lr": 1e-400})"), "optimizer.lr: 0 must be finite and > 0");
  EXPECT_EQ(parse_scenario(minimal(R"("optimizer": {"lr": 1})")).optimizer.lr, 1.0);
}

TEST(ScenarioJson, DuplicateKeysAreRejectedByPath) {
  expect_rejected(R"({"schema": 1, "world_size": 2, "world_size": 4})", "world_size: duplicate key");
  expect_rejected(R"({"schema": 1, "schema": 1})", "schema: duplicate key");
  expect_rejected(minimal(R"("blocks": [{}, {"gated": true, "gated": false}])"), "blocks[1].gated: duplicate key");
  expect_rejected(R"({"schema": 1, "fully_shard": {"": {}, "out": {}, "out": {}}})", "fully_shard[\"out\"]: duplicate key");
}

TEST(ScenarioJson, SyntaxErrorsNameTheByteOffset) {
  expect_rejected(R"({"schema": 1,, })", "scenario: invalid JSON at byte 14: ");
  expect_rejected("", "scenario: invalid JSON at byte 1: ");
  expect_rejected(minimal() + " x", "scenario: invalid JSON at byte ");
  expect_rejected("{\"name\": \"\xff\"}", "scenario: invalid JSON at byte ");
  // An unterminated megabyte-less string: the message quotes the token, but not all of it.
  try {
    parse_scenario("{\"name\": \"" + std::string(100000, 'a'));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_LT(std::string(e.what()).size(), 500u);
  }
}

TEST(ScenarioJson, DeepNestingAndHugeTextAreRejectedBeforeBuilding) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_rejected(deep, "[0][0][0]");
  expect_rejected(minimal(R"("name": )" + std::string(40, '[') + std::string(40, ']')), "name[0][0]");
  expect_rejected(minimal(R"("name": ")" + std::string(ScenarioTextLimits::kMaxBytes, 'a') + "\""),
                  "scenario: the text is ");
  // 129 blocks are refused by count, before any BlockSpec is made.
  std::string blocks = "[{}";
  for (int i = 0; i < 128; ++i) blocks += ", {}";
  expect_rejected(minimal(R"("blocks": )" + blocks + "]"), "blocks: 129 blocks, over the limit of 128");
  // The size budget: 10 blocks of dim 60000 would be 144 GB of parameters.
  expect_rejected(minimal(R"("dims": {"dim": 60000}, "blocks": [{}, {}, {}, {}, {}, {}, {}, {}, {}, {}])"),
                  "size budget: parameters take ");
}

TEST(ScenarioJson, LoadScenarioNamesTheFile) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/shardfuzz_scenario_json_test_good.json";
  const std::string bad = dir + "/shardfuzz_scenario_json_test_bad.json";
  std::ofstream(good) << to_json_text(example());
  std::ofstream(bad) << "{\"schema\": 1, \"world_size\": 0, \"fully_shard\": {\"\": {}}}";
  EXPECT_EQ(to_json(load_scenario(good)), to_json(example()));
  try {
    load_scenario(bad);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), bad + ": world_size: 0 outside [1, 64]");
  }
  const std::string missing = dir + "/shardfuzz_scenario_json_test_missing.json";
  try {
    load_scenario(missing);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(missing + ": cannot open", 0), 0u) << e.what();
  }
  EXPECT_THROW(load_scenario(dir), std::runtime_error);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace shardfuzz::harness
