// Property tests of the scenario reader against hostile input. The property, for every generator:
// parse_scenario either returns a scenario that validates and round-trips exactly, or throws
// std::invalid_argument / std::runtime_error with a short message — nothing else, no crash, no
// hang, and no absurd allocation (the process's address space may grow by at most 1 GiB while the
// properties run). Generators: random bytes, random JSON values over the schema's vocabulary,
// valid scenarios with structural and textual mutations, and random dims x block counts around
// the size budget. 10,000 cases in all.
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

namespace shardfuzz::harness {

// How RapidCheck prints a generated Scenario in a counterexample (found by ADL).
static void showValue(const Scenario& s, std::ostream& os) { os << to_json_text(s); }

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// ---- running a property for a fixed number of cases ------------------------------------------

// Caps the address space at its current size plus `headroom` while alive: an absurd allocation
// becomes std::bad_alloc, which the property reports, instead of swapping the machine.
class AddressSpaceCap {
 public:
  explicit AddressSpaceCap(unsigned long long headroom) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    unsigned long long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%llu", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    if (pages == 0 || getrlimit(RLIMIT_AS, &old_) != 0) return;
    rlimit cap = old_;
    const unsigned long long want = pages * 4096ull + headroom;
    if (cap.rlim_cur != RLIM_INFINITY && cap.rlim_cur <= want) return;
    cap.rlim_cur = want;
    active_ = setrlimit(RLIMIT_AS, &cap) == 0;
#endif
  }
  ~AddressSpaceCap() {
    if (active_) setrlimit(RLIMIT_AS, &old_);
  }
  AddressSpaceCap(const AddressSpaceCap&) = delete;
  AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;

 private:
  rlimit old_{};
  bool active_ = false;
};

// rc::check with an explicit case count (RC_PARAMS still sets the seed and max_size).
template <class Testable>
void check_cases(int cases, Testable&& testable) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = cases;
  std::optional<AddressSpaceCap> cap(std::in_place, 1ull << 30);
  const rc::detail::TestResult result = rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  cap.reset();
  if (result.template is<rc::detail::SuccessResult>()) {
    rc::detail::printResultMessage(result, std::cout);  // how many cases were accepted, rejected
    std::cout << std::endl;
  } else {
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    FAIL() << os.str();
  }
}

// ---- the property ----------------------------------------------------------------------------

// parse_scenario(text) is total: a valid, exactly round-tripping scenario, or a rejection of the
// two allowed kinds with a bounded message. Returns the accepted scenario, if any.
std::optional<Scenario> parse_is_total(const std::string& text) {
  std::optional<Scenario> accepted;
  std::string error, unexpected;
  try {
    accepted = parse_scenario(text);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  } catch (const std::runtime_error& e) {
    error = e.what();
  } catch (const std::exception& e) {
    unexpected = std::string(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    unexpected = "an exception that is no std::exception";
  }
  RC_LOG() << (accepted ? "accepted" : "rejected: " + error) << "\n";
  RC_TAG(accepted ? "accepted" : "rejected");
  if (!unexpected.empty()) RC_FAIL("parse_scenario threw " + unexpected);
  if (!accepted) {
    RC_ASSERT(!error.empty());
    RC_ASSERT(error.size() < 10000u);  // messages quote values and paths, cut short
    return std::nullopt;
  }
  accepted->validate();  // throws (failing the case) if the reader let an invalid scenario through
  RC_ASSERT(accepted->full_parameter_bytes() <= ScenarioLimits::kMaxParameterBytes);
  const json j = to_json(*accepted);
  RC_ASSERT(to_json(parse_scenario(to_json_text(*accepted))) == j);
  return accepted;
}

// ---- generators ------------------------------------------------------------------------------

// A uniform choice in [lo, hi): rc::gen::inRange scales its range by the size, which would keep
// early cases on the first choices (mutation kinds, nodes, optional parts).
template <class T>
T pick(T lo, T hi) {
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(lo, hi));
}

const std::vector<std::string>& vocabulary() {
  static const std::vector<std::string> words = {
      "schema", "name", "seed", "world_size", "expert_shard_size", "profile", "steps", "dims", "dim", "hidden",
      "experts", "tokens", "dtype", "bfloat16", "mixed_precision", "param_dtype", "reduce_dtype", "upcast_trainable", "loss", "mean", "sum", "optimizer", "kind", "lr", "beta1", "beta2", "eps",
      "weight_decay", "input_requires_grad", "input_per_rank", "blocks", "gated", "ac", "frozen", "lora", "fully_shard",
      "reshard_after_forward", "shard_dim", "mesh", "forward_prefetch", "backward_prefetch", "", "layers",
      "layers.0", "layers.0.moe.experts", "layers.1", "out", "self", "auto", "moe", "mlp", "none",
      "non_reentrant", "reentrant", "sgd", "adamw", "dp", "experts", "float32", "torch-2.9", "torch-2.11", "strict",
      "faults", "rank", "collective", "delay_ms", "straggler", "collective_error", "hang", "crash", "exception",
      "module", "pass", "step", "forward", "backward", "nan", "inf", "oom", "abort", "allocation", "limit_bytes"};
  return words;
}

// Numbers that break naive readers, as JSON text.
const std::vector<std::string>& hostile_numbers() {
  static const std::vector<std::string> numbers = {
      "0", "-0", "1", "-1", "2", "3", "64", "65", "128", "129", "1000", "1001", "65536", "65537", "60000",
      "2147483647", "2147483648", "-2147483649", "4294967296", "9223372036854775807", "9223372036854775808",
      "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
      "1e308", "-1e308", "1e400", "-1e400", "1e-320", "2.5", "2.0", "0.5", "1e2", "-0.0", "1E+2"};
  return numbers;
}

rc::Gen<std::string> words() {
  return rc::gen::oneOf(rc::gen::elementOf(vocabulary()), rc::gen::elementOf(vocabulary()),
                        rc::gen::arbitrary<std::string>());
}

rc::Gen<json> json_values(int depth) {
  auto scalars = rc::gen::oneOf(
      rc::gen::just(json(nullptr)), rc::gen::map(rc::gen::arbitrary<bool>(), [](bool b) { return json(b); }),
      rc::gen::map(rc::gen::arbitrary<int64_t>(), [](int64_t v) { return json(v); }),
      rc::gen::map(rc::gen::inRange<int64_t>(-3, 70), [](int64_t v) { return json(v); }),
      rc::gen::map(rc::gen::arbitrary<uint64_t>(), [](uint64_t v) { return json(v); }),
      rc::gen::map(rc::gen::arbitrary<double>(), [](double v) { return json(v); }),
      rc::gen::map(rc::gen::elementOf(hostile_numbers()),
                   [](const std::string& t) { return json::parse(t, nullptr, /*allow_exceptions=*/false); }),
      rc::gen::map(words(), [](const std::string& s) { return json(s); }));
  if (depth == 0) return scalars;
  auto arrays = rc::gen::map(rc::gen::resize(6, rc::gen::container<std::vector<json>>(json_values(depth - 1))),
                             [](std::vector<json> v) { return json(std::move(v)); });
  auto objects = rc::gen::map(
      rc::gen::resize(6, rc::gen::container<std::vector<std::pair<std::string, json>>>(
                             rc::gen::pair(words(), json_values(depth - 1)))),
      [](const std::vector<std::pair<std::string, json>>& members) {
        json o = json::object();
        for (const auto& [k, v] : members) o[k] = v;
        return o;
      });
  return rc::gen::oneOf(scalars, arrays, objects, objects);
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// Valid scenarios by construction: every choice is drawn from what validate() allows.
rc::Gen<Scenario> valid_scenarios() {
  return rc::gen::exec([] {
    using R = fsdp::ReshardAfterForward;
    Scenario s;
    s.name = *rc::gen::element<std::string>("", "repro", "nested \"experts\"", "\xc3\xbcnic\xc3\xb6" "de");
    s.seed = *rc::gen::arbitrary<uint64_t>();
    s.world_size = *rc::gen::element(1, 2, 4, 8);
    const std::vector<int> ws = divisors(s.world_size);
    s.expert_shard_size = *rc::gen::oneOf(rc::gen::just(0), rc::gen::elementOf(ws));
    s.profile = semantics::Profile::named(*rc::gen::element<std::string>("torch-2.9", "torch-2.11", "strict"));
    s.steps = *rc::gen::inRange(1, 5);
    s.dims = {*rc::gen::element<int64_t>(8, 16, 24), *rc::gen::element<int64_t>(4, 8, 12, 6),
              *rc::gen::inRange<int64_t>(1, 5), *rc::gen::inRange<int64_t>(1, 9)};
    s.loss = *rc::gen::element<std::string>("mean", "sum");
    s.optimizer.kind = *rc::gen::element(train::OptimizerConfig::Kind::Sgd, train::OptimizerConfig::Kind::AdamW);
    s.optimizer.lr = *rc::gen::element(0.05, 1e-3, 0.1 + 0.2, 1.0);
    s.optimizer.weight_decay = *rc::gen::element(0.0, 0.01);
    s.input_requires_grad = *rc::gen::arbitrary<bool>();
    s.input_per_rank = *rc::gen::arbitrary<bool>();
    const int blocks = *rc::gen::inRange(0, 5);
    for (int i = 0; i < blocks; ++i) {
      BlockSpec b;
      b.kind = *rc::gen::element(BlockSpec::Kind::Moe, BlockSpec::Kind::Mlp);
      b.gated = *rc::gen::arbitrary<bool>();
      b.ac = *rc::gen::element(ac::CheckpointMode::None, ac::CheckpointMode::NonReentrant, ac::CheckpointMode::Reentrant);
      b.frozen = pick(0, 4) == 0;
      s.blocks.push_back(b);
    }
    for (const std::string& path : s.module_paths()) {
      if (!path.empty() && pick(0, 3) != 0) continue;
      ShardSpec spec;
      spec.mesh = *rc::gen::element<std::string>("dp", "dp", "experts");
      const int group = spec.mesh == "experts" && s.expert_shard_size > 0 ? s.expert_shard_size : s.world_size;
      spec.reshard_after_forward = *rc::gen::oneOf(rc::gen::element(R::automatic(), R::yes(), R::no()),
                                                   rc::gen::map(rc::gen::elementOf(divisors(group)), R::ranks));
      const bool experts = path.size() > 12 && path.compare(path.size() - 12, 12, ".moe.experts") == 0;
      if (experts && s.dims.dim % group == 0 && s.dims.hidden % group == 0) spec.shard_dim = pick(0, 3);
      s.fully_shard[path] = spec;
    }
    std::vector<std::string> targets = {"self"};
    for (const auto& [path, spec] : s.fully_shard) targets.push_back(path);
    for (auto& [path, spec] : s.fully_shard) {
      for (auto* list : {&spec.forward_prefetch, &spec.backward_prefetch}) {
        const int mode = pick(0, 4);  // absent (twice as likely), empty, some
        if (mode == 2) *list = std::vector<std::string>{};
        if (mode == 3)
          *list = *rc::gen::resize(4, rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(targets)));
      }
    }
    for (int i = pick(0, 4) - 1; i > 0; --i) {  // a fault plan one time in two
      const std::string kind = *rc::gen::elementOf(fault_kinds());
      const int rank = pick(0, s.world_size);
      const int collective = *rc::gen::inRange(0, ScenarioLimits::kMaxFaultCollective + 1);
      if (auto c = enum_from_name<CollectiveFault::Kind>(kind)) {
        const int delay = *c == CollectiveFault::Kind::Straggler ? *rc::gen::inRange(1, ScenarioLimits::kMaxStragglerMs + 1) : 0;
        s.faults.push_back(FaultSpec::collective_fault(rank, *c, collective, delay));
      } else if (auto m = enum_from_name<ModuleFault::Kind>(kind)) {
        const int block = pick(0, static_cast<int>(s.blocks.size()) + 1) - 1;  // -1: the root
        const auto pass = *rc::gen::elementOf(std::vector<ModuleFault::Pass>{ModuleFault::Pass::Forward, ModuleFault::Pass::Backward});
        s.faults.push_back(FaultSpec::module_fault(rank, *m, block < 0 ? "" : "layers." + std::to_string(block), pick(0, s.steps), pass));
      } else if (pick(0, 2) == 0) {
        s.faults.push_back(FaultSpec::oom_at_allocation(rank, pick(0, ScenarioLimits::kMaxFaultAllocation + 1)));
      } else {
        s.faults.push_back(FaultSpec::oom_above_bytes(rank, pick<int64_t>(1, ScenarioLimits::kMaxFaultLimitBytes + 1)));
      }
    }
    return s;
  });
}

// JSON text from a DOM whose string markers ask for what a DOM cannot hold: "\x01raw:TEXT" values
// are written as TEXT (numbers out of range, nesting too deep to build), "\x01dup:KEY" keys as KEY
// (duplicate keys).
const std::string kRaw = "\x01raw:";
const std::string kDup = "\x01dup:";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Escapes what JSON requires and nothing more, so that invalid UTF-8 reaches the parser raw.
std::string raw_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write(const ordered_json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, member] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += raw_string(starts_with(k, kDup) ? k.substr(kDup.size()) : k);
      out += ": ";
      write(member, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      write(v[i], out);
    }
    out += ']';
  } else if (v.is_string() && starts_with(v.get_ref<const std::string&>(), kRaw)) {
    out += v.get_ref<const std::string&>().substr(kRaw.size());
  } else if (v.is_string()) {
    out += raw_string(v.get_ref<const std::string&>());
  } else {
    out += v.dump();
  }
}

void collect(ordered_json& v, std::vector<ordered_json*>& nodes) {
  nodes.push_back(&v);
  if (v.is_object())
    for (auto& [k, member] : v.items()) collect(member, nodes);
  else if (v.is_array())
    for (auto& e : v) collect(e, nodes);
}

ordered_json* pick_node(ordered_json& root, bool objects_only) {
  std::vector<ordered_json*> nodes;
  collect(root, nodes);
  std::vector<ordered_json*> eligible;
  for (ordered_json* n : nodes)
    if (!objects_only || (n->is_object() && !n->empty())) eligible.push_back(n);
  if (eligible.empty()) return nullptr;
  return eligible[pick<std::size_t>(0, eligible.size())];
}

std::string pick_key(const ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.push_back(k);
  return keys[pick<std::size_t>(0, keys.size())];
}

std::string nested(int depth, char open, const std::string& inner) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open == '[' ? "[" : "{\"dims\": ";
  s += inner;
  for (int i = 0; i < depth; ++i) s += open == '[' ? ']' : '}';
  return s;
}

// One structural mutation of a scenario's DOM.
void mutate(ordered_json& root) {
  enum { Delete, Rename, Duplicate, TypeSwap, HostileNumber, DeepNesting, HugeArray, BudgetBomb, Count };
  switch (pick(0, static_cast<int>(Count))) {
    case Delete:
      if (ordered_json* o = pick_node(root, true)) o->erase(pick_key(*o));
      break;
    case Rename:
      if (ordered_json* o = pick_node(root, true)) {
        const std::string key = pick_key(*o);
        ordered_json value = (*o)[key];
        o->erase(key);
        (*o)[*rc::gen::oneOf(rc::gen::just(key + "_"), rc::gen::just(key.empty() ? "x" : key.substr(1)),
                             rc::gen::just(key + key), words())] = std::move(value);
      }
      break;
    case Duplicate:
      if (ordered_json* o = pick_node(root, true)) {
        const std::string key = pick_key(*o);
        (*o)[kDup + key] = pick(0, 2) ? (*o)[key] : ordered_json(*json_values(1));
      }
      break;
    case TypeSwap:
      if (ordered_json* n = pick_node(root, false)) *n = ordered_json(*json_values(2));
      break;
    case HostileNumber:
      if (ordered_json* n = pick_node(root, false)) *n = kRaw + *rc::gen::elementOf(hostile_numbers());
      break;
    case DeepNesting:
      if (ordered_json* n = pick_node(root, false))
        *n = kRaw + nested(*rc::gen::inRange(1, 3000), *rc::gen::element('[', '{'), "1");
      break;
    case HugeArray:
      if (ordered_json* n = pick_node(root, false)) {
        const std::string element = *rc::gen::element<std::string>("{}", "\"self\"", "0", "[]", "{\"kind\": \"mlp\"}");
        const int count = *rc::gen::inRange(100, 20000);
        std::string text = "[";
        for (int i = 0; i < count; ++i) text += (i ? ", " : "") + element;
        *n = kRaw + text + "]";
      }
      break;
    case BudgetBomb:
      if (!root.is_object()) break;
      // Far over the budget if built: must be refused by arithmetic, not by running out of memory.
      root["dims"] = ordered_json{{"dim", *rc::gen::inRange(20000, 65537)}, {"hidden", *rc::gen::inRange(1, 65537)}};
      root["blocks"] = ordered_json(static_cast<std::size_t>(*rc::gen::inRange(10, 129)), ordered_json::object());
      break;
  }
}

// One byte-level mutation of the text.
void mutate_text(std::string& text) {
  if (text.empty()) return;
  const std::size_t at = pick<std::size_t>(0, text.size());
  switch (pick(0, 3)) {
    case 0: text.resize(at); break;
    case 1: text[at] = *rc::gen::arbitrary<char>(); break;
    case 2: text.insert(at, 1, *rc::gen::element('{', '}', '[', ']', ',', ':', '"', '\\', '\0', '\xff')); break;
  }
}

// A JSON-ish alphabet, so random text gets past the first byte more often.
rc::Gen<std::string> jsonish_text() {
  return rc::gen::container<std::string>(rc::gen::element('{', '}', '[', ']', '"', ':', ',', ' ', '0', '1', '-', '.',
                                                           'e', 't', 'r', 'u', 'f', 'a', 'l', 's', 'n', '\\', 'x'));
}

// ---- tests -----------------------------------------------------------------------------------

TEST(ScenarioJsonFuzz, ParseIsTotal_RandomBytes) {
  check_cases(2500, [] {
    const std::string text =
        *rc::gen::oneOf(rc::gen::arbitrary<std::string>(), jsonish_text(),
                        rc::gen::map(jsonish_text(), [](std::string s) { return "{\"schema\": 1, " + s; }));
    parse_is_total(text);
  });
}

TEST(ScenarioJsonFuzz, ParseIsTotal_RandomJsonValues) {
  check_cases(2000, [] {
    json value = *json_values(4);
    // Half the time inside a scenario that would otherwise be valid, so that values reach the
    // field readers and validate() instead of stopping at "schema: missing".
    if (*rc::gen::arbitrary<bool>()) {
      json base = {{"schema", 1}, {"fully_shard", {{"", json::object()}}}};
      if (value.is_object())
        for (auto& [k, v] : value.items()) base[k] = v;
      else
        base[*rc::gen::elementOf(vocabulary())] = value;
      value = std::move(base);
    }
    parse_is_total(value.dump(-1, ' ', false, json::error_handler_t::replace));
  });
}

TEST(ScenarioJsonFuzz, ParseIsTotal_MutatedValidScenarios) {
  check_cases(3500, [] {
    const Scenario valid = *valid_scenarios();
    ordered_json dom = ordered_json::parse(to_json_text(valid));
    const int mutations = *rc::gen::inRange(1, 4);
    for (int i = 0; i < mutations; ++i) mutate(dom);
    std::string text;
    write(dom, text);
    if (pick(0, 4) == 0) mutate_text(text);
    parse_is_total(text);
  });
}

TEST(ScenarioJsonFuzz, RoundTripsExactly_ValidScenarios) {
  check_cases(1500, [] {
    const Scenario s = *valid_scenarios();
    s.validate();
    const std::optional<Scenario> back = parse_is_total(to_json_text(s));
    RC_ASSERT(back.has_value());
    RC_ASSERT(to_json(*back) == to_json(s));
    RC_ASSERT(to_json(scenario_from_json(to_json(s))) == to_json(s));
  });
}

TEST(ScenarioJsonFuzz, AcceptsExactlyWithinSizeBudget_RandomDimsAndBlockCounts) {
  check_cases(500, [] {
    const int blocks = *rc::gen::inRange(0, 129);
    const auto dim = [] {
      return *rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 65537), rc::gen::inRange<int64_t>(1, 2049));
    };
    const int64_t d = dim(), h = dim(), e = dim(), t = dim();
    const std::string kind = *rc::gen::element<std::string>("moe", "mlp");
    json j = {{"schema", 1},
              {"dims", {{"dim", d}, {"hidden", h}, {"experts", e}, {"tokens", t}}},
              {"blocks", json::array()},
              {"fully_shard", {{"", json::object()}}}};
    for (int i = 0; i < blocks; ++i) j["blocks"].push_back({{"kind", kind}});
    // The budget, computed here in long double: no overflow, independent of the code under test.
    using F = long double;
    const bool moe = kind == "moe";
    const F block = F(d) * d + d + (moe ? 2 * F(e) * d * h + F(d) * e + e : F(d) * h + h + F(h) * d + d);
    const F bytes = 4 * (F(d) * d + d + blocks * block);
    const F activations = F(t) * std::max<F>(F(d), F(h) * e);
    const bool within = bytes <= ScenarioLimits::kMaxParameterBytes && activations <= ScenarioLimits::kMaxActivationElements;
    RC_TAG(within ? "within budget" : "over budget");
    std::string error;
    try {
      parse_scenario(j.dump());
    } catch (const std::invalid_argument& ex) {
      error = ex.what();
    }
    RC_LOG() << error << "\n";
    RC_ASSERT(error.empty() == within);
    if (!within) RC_ASSERT(starts_with(error, "size budget: "));
  });
}

}  // namespace
}  // namespace shardfuzz::harness
