// A fault's JSON form: {"kind", "rank", then the kind's own keys} (fault_json.h).
#include "harness/scenario/fault_json.h"

#include "harness/scenario/field_visitors.hpp"

namespace shardfuzz::harness {

namespace fields_detail {
namespace {

template <class Json>
Json write_fault(const FaultSpec& f) {
  Json out = Json::object();
  out["kind"] = f.kind_name();
  out["rank"] = f.rank;
  if (const auto* c = f.at_collective()) {
    out["collective"] = c->collective;
    if (c->kind == CollectiveFault::Kind::Straggler) out["delay_ms"] = c->delay_ms;
  } else if (const auto* m = f.in_module()) {
    out["module"] = m->module;
    if (m->kind == ModuleFault::Kind::Exception) out["pass"] = name_of(m->pass);
    out["step"] = m->step;
  } else if (const auto* a = f.in_allocator()) {
    if (const auto* at = std::get_if<AllocationFault::AtAllocation>(&a->trigger)) out["allocation"] = at->index;
    else out["limit_bytes"] = std::get<AllocationFault::AboveBytes>(a->trigger).limit;
  }
  return out;
}

// Rejects a key that belongs to another kind of fault, with what that key is for.
void reject_foreign_keys(const json& v, const std::string& path, const FaultSpec& f) {
  const bool collective = f.at_collective(), module = f.in_module(), oom = f.in_allocator();
  const bool straggler = f.is(CollectiveFault::Kind::Straggler), exception = f.is(ModuleFault::Kind::Exception);
  const std::string kind = f.kind_name();
  const std::string article = kind == "exception" || kind == "inf" || kind == "oom" ? "an " : "a ";
  if (!collective && v.contains("collective"))
    reject(member(path, "collective"), article + kind + " fault fires " + (oom ? "in the allocator" : "in a module") +
                                           ", not at a collective");
  if (!straggler && v.contains("delay_ms")) {
    // Never the whole value: a hostile file can put a megabyte there.
    const json& delay = v["delay_ms"];
    reject(member(path, "delay_ms"), (delay.is_number_integer() ? delay.dump() : describe(delay)) +
                                         ": only a straggler has a delay");
  }
  for (const char* key : {"module", "step"})
    if (!module && v.contains(key)) reject(member(path, key), "only an exception, nan or inf fault names a module and a step");
  if (!exception && v.contains("pass")) reject(member(path, "pass"), "only an exception fault names a pass");
  for (const char* key : {"allocation", "limit_bytes"})
    if (!oom && v.contains(key)) reject(member(path, key), "only an oom fault names an allocation or a limit");
}

FaultSpec read_fault_kind(const json& v, const std::string& path) {
  const auto kind = v.find("kind");
  const std::string name = kind == v.end() ? "collective_error" : read_string(*kind, member(path, "kind"));
  FaultSpec f;
  if (auto c = enum_from_name<CollectiveFault::Kind>(name)) f.fault = CollectiveFault{*c};
  else if (auto m = enum_from_name<ModuleFault::Kind>(name)) {
    ModuleFault module;
    module.kind = *m;
    f.fault = module;
  }
  else if (name == kOomFaultName) f.fault = AllocationFault{};
  else {
    std::string list;
    for (const auto& k : fault_kinds()) list += (list.empty() ? "" : ", ") + k;
    reject(member(path, "kind"), quoted(name) + " is not a fault kind (" + list + ")");
  }
  return f;
}

void read_allocation_trigger(const json& v, const std::string& path, AllocationFault& a) {
  const bool by_index = v.contains("allocation"), by_limit = v.contains("limit_bytes");
  if (by_index == by_limit)
    reject(member(path, "allocation"), "an oom fault names either an allocation or limit_bytes (one of them)");
  if (by_index) a.trigger = AllocationFault::AtAllocation{read_int(v["allocation"], member(path, "allocation"))};
  else a.trigger = AllocationFault::AboveBytes{read_int64(v["limit_bytes"], member(path, "limit_bytes"))};
}

}  // namespace

json fault_to_json(const FaultSpec& fault) { return write_fault<json>(fault); }
nlohmann::ordered_json fault_to_ordered_json(const FaultSpec& fault) { return write_fault<nlohmann::ordered_json>(fault); }

FaultSpec fault_from_json(const json& v, const std::string& path) {
  static const std::vector<const char*> keys = {"kind", "rank", "collective", "delay_ms", "module",
                                                "pass", "step", "allocation", "limit_bytes"};
  reject_unknown_keys(v, path, keys);
  FaultSpec f = read_fault_kind(v, path);
  reject_foreign_keys(v, path, f);
  if (v.contains("rank")) f.rank = read_int(v["rank"], member(path, "rank"));
  if (auto* c = std::get_if<CollectiveFault>(&f.fault)) {
    if (v.contains("collective")) c->collective = read_int(v["collective"], member(path, "collective"));
    if (v.contains("delay_ms")) c->delay_ms = read_int(v["delay_ms"], member(path, "delay_ms"));
  } else if (auto* m = std::get_if<ModuleFault>(&f.fault)) {
    if (v.contains("module")) m->module = read_string(v["module"], member(path, "module"));
    if (v.contains("step")) m->step = read_int(v["step"], member(path, "step"));
    if (m->kind == ModuleFault::Kind::Exception) {
      if (!v.contains("pass")) reject(member(path, "pass"), "missing (an exception fault names its pass: forward, backward)");
      m->pass = read_value<ModuleFault::Pass>(v["pass"], member(path, "pass"), allow::Any{});
    }
  } else {
    read_allocation_trigger(v, path, std::get<AllocationFault>(f.fault));
  }
  return f;
}

}  // namespace fields_detail
}  // namespace shardfuzz::harness
