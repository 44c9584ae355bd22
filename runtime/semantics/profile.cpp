// The base profiles, the switch registry and "base+switch" composition (by name and as values).
// Adding a profile means adding a base here; adding a difference means adding a switch (and its
// registry row).
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace shardfuzz::semantics {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Profile base_profile(const std::string& name, const std::string& full) {
  Profile p;
  p.name = full;
  p.base = name;
  if (name == "torch-2.7" || name == "torch-2.9" || name == "torch-2.11") {
    p.reentrant_checkpoint_needs_input_grad = true;
    p.stale_state_survives_non_last_backward = true;
    p.all_reduce_state_per_group = true;
  }
  if (name == "torch-2.7") {
    p.post_forward_reshards_during_backward = true;
    p.root_never_reshards_after_forward = true;
  } else if (name == "torch-2.9") {
    p.post_forward_reshards_during_backward = true;
  } else if (name == "torch-2.11") {
    p.world1_persistent_all_gather_buffer = true;
  } else if (name == "strict") {
    p.world1_persistent_all_gather_buffer = true;
    p.prefetch_skips_groups_without_pending_backward = true;
    p.free_unconsumed_all_gather_at_post_backward = true;
    p.recompute_of_finished_group_takes_forward_path = true;
  } else {
    throw std::invalid_argument("profile: unknown base '" + name + "' in '" + full + "' (expected " +
                                joined(Profile::names()) + ", optionally followed by +switch)");
  }
  return p;
}

// What `strict` has for one switch ("~switch" sets it so).
bool strict_value(bool Profile::*flag) {
  static const Profile strict = base_profile("strict", "strict");
  return strict.*flag;
}

}  // namespace

const std::vector<Profile::Switch>& Profile::switches() {
  static const std::vector<Switch> registry = {
      {"post_forward_reshards_during_backward", &Profile::post_forward_reshards_during_backward},
      {"root_never_reshards_after_forward", &Profile::root_never_reshards_after_forward},
      {"world1_persistent_all_gather_buffer", &Profile::world1_persistent_all_gather_buffer},
      {"reentrant_checkpoint_needs_input_grad", &Profile::reentrant_checkpoint_needs_input_grad},
      {"stale_state_survives_non_last_backward", &Profile::stale_state_survives_non_last_backward},
      {"all_reduce_state_per_group", &Profile::all_reduce_state_per_group},
      {"prefetch_skips_groups_without_pending_backward", &Profile::prefetch_skips_groups_without_pending_backward},
      {"free_unconsumed_all_gather_at_post_backward", &Profile::free_unconsumed_all_gather_at_post_backward},
      {"recompute_of_finished_group_takes_forward_path", &Profile::recompute_of_finished_group_takes_forward_path},
      {"experts_skip_empty", &Profile::experts_skip_empty},
      {"group_reference_cycle", &Profile::group_reference_cycle},
      {"upcast_frozen_params", &Profile::upcast_frozen_params},
  };
  return registry;
}

Profile Profile::named(const std::string& name) {
  // Tokens: the base, then each switch preceded by '+' (turn on) or '~' (set to strict's value).
  std::vector<std::pair<char, std::string>> tokens;
  std::size_t begin = 0;
  char op = 0;
  while (true) {
    const std::size_t sep = name.find_first_of("+~", begin);
    tokens.emplace_back(op, name.substr(begin, sep == std::string::npos ? std::string::npos : sep - begin));
    if (sep == std::string::npos) break;
    op = name[sep];
    begin = sep + 1;
  }
  Profile p = base_profile(tokens.front().second, name);
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    const auto& all = switches();
    auto it = std::find_if(all.begin(), all.end(), [&](const Switch& s) { return tokens[i].second == s.name; });
    if (it == all.end()) {
      std::vector<std::string> known;
      for (const auto& s : all) known.push_back(s.name);
      throw std::invalid_argument("profile: unknown switch '" + tokens[i].second + "' in '" + name + "' (known: " +
                                  joined(known) + ")");
    }
    p.*(it->flag) = tokens[i].first == '+' ? true : strict_value(it->flag);
  }
  return p;
}

std::vector<std::string> Profile::names() { return {"torch-2.7", "torch-2.9", "torch-2.11", "strict"}; }

std::vector<const Profile::Switch*> Profile::deviations_from_strict() const {
  static const Profile strict = named("strict");
  std::vector<const Switch*> out;
  for (const auto& s : switches())
    if (this->*(s.flag) != strict.*(s.flag) && s.name != std::string("world1_persistent_all_gather_buffer"))
      out.push_back(&s);
  return out;
}

Profile Profile::with(const Switch& s) const {
  Profile p = *this;
  p.name = name + "+" + s.name;
  p.*(s.flag) = true;
  return p;
}

Profile Profile::without(const Switch& s) const {
  Profile p = *this;
  p.name = name + "~" + s.name;
  p.*(s.flag) = strict_value(s.flag);
  return p;
}

bool Profile::operator==(const Profile& other) const {
  if (name != other.name || base != other.base) return false;
  for (const auto& s : switches())
    if (this->*(s.flag) != other.*(s.flag)) return false;
  return true;
}

}  // namespace shardfuzz::semantics
