// A row of the command table (app/main.cpp): a subcommand's name, the function that registers it
// with its options, and the function that runs it — so main dispatches by name, not by a chain.
#pragma once

#include "app/backend_flags.h"

#include <CLI/App.hpp>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

namespace shardfuzz::app {

// What every run function may use besides its options.
struct Invocation {
  std::string command_line;  // as typed, for the reproducers a finding writes
  std::ostream& out;
  std::ostream& err;
};

struct Command {
  std::string name;
  std::function<CLI::App*(CLI::App&)> add_options;
  std::function<int(const Invocation&)> run;
  BackendFlags* backend = nullptr;  // the parsed --backend flags of commands that have them (--join)
};

namespace detail {
template <class Options, class = void>
struct has_backend_flags : std::false_type {};
template <class Options>
struct has_backend_flags<Options, std::void_t<decltype(std::declval<Options&>().backend)>>
    : std::is_same<decltype(std::declval<Options&>().backend), BackendFlags> {};
}  // namespace detail

// The row for a subcommand whose options are an `Options`, filled by `add` and read by `run`; the
// row owns them.
template <class Options>
Command make_command(std::string name, CLI::App* (*add)(CLI::App&, Options&),
                     std::function<int(const Options&, const Invocation&)> run) {
  auto options = std::make_shared<Options>();
  Command c;
  c.name = std::move(name);
  c.add_options = [options, add](CLI::App& app) { return add(app, *options); };
  c.run = [options, run = std::move(run)](const Invocation& in) { return run(*options, in); };
  if constexpr (detail::has_backend_flags<Options>::value) c.backend = &options->backend;
  return c;
}

}  // namespace shardfuzz::app
